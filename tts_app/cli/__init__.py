"""The command line: ``python -m tts_app synth ...`` and the operator's library commands."""
