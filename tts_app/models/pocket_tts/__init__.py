"""Kyutai's Pocket TTS (pocket-tts 4.0.1, MIT) in plain PyTorch, built for batched streaming on a CPU.

A flow language model over Mimi's continuous latents, conditioned on a voice prompt (a clip encoded
by Mimi) and text, and Mimi's decoder back to 24 kHz audio. Pieces, one per file: ``config`` (the
official YAML), ``text`` (chunks and token ids), ``transformer`` (shared blocks, per-row positions),
``flow_net`` (the LSD flow head), ``flow_lm`` (the backbone, its KV slots), ``seanet`` and ``stream_state``
(Mimi's causal convolutions, per-row streaming buffers), ``mimi`` (the codec), ``voice`` (a clip's
voice state), ``generator`` (prefill, decode loop, end of speech, streaming decode) and ``weights``.

Importing this package loads nothing heavy.
"""
