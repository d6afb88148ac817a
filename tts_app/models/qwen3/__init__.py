"""Qwen3-TTS (12 Hz tokenizer) in plain PyTorch, built for batched continuous generation.

Pieces, one per file: ``config`` (checkpoint config mirrors), ``layers`` (the shared
transformer blocks), ``talker``, ``code_predictor``, ``codec`` (codes to waveform),
``speaker_encoder`` (reference-voice x-vector), ``kv_cache`` (slot pool and static cache),
``sampling``, ``prompt`` (prefill embeddings), ``generator`` (prefill, decode loop,
compaction), ``streaming`` (the codec over each row's new frames, bucketed for graphs) and ``weights`` (finding and loading a checkpoint).

Importing this package loads nothing heavy; transformers is never needed.
"""
