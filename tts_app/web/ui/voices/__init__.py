"""The voice picker's choices (built-in, saved, uploaded) and the visitor's saved-voice library."""
