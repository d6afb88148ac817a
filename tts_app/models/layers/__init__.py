"""LLM pieces shared by the torch models: transformer blocks and the slot-indexed KV cache."""
