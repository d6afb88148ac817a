"""The speech models: Piper (piper/), Qwen3-TTS (qwen3/), Chatterbox (chatterbox/) and the layers both torch models share."""
