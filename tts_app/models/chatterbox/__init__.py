"""Chatterbox (Resemble AI, MIT): T3 (a Llama over speech tokens, with classifier-free guidance) + S3Gen
(token-to-mel flow matching and a HiFT vocoder), batched and streamed for the engine.

The model modules are the official ``chatterbox-tts`` package's (installed --no-deps from
requirements-chatterbox.txt); what is ours: the batched, KV-cached T3 decode loop with per-row guidance and
sampling, the ragged S3Gen pass without padding leaks, per-row random streams, and the chunked streaming.
Nothing here is imported unless a Chatterbox model is requested.
"""
