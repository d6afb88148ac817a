"""Matching the model's voice to a reference: the adapter plan, pitch, formant and spectral filters."""
