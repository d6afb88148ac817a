"""Pieces several tabs share: the model picker, line limits, run figures, one-line user errors."""
