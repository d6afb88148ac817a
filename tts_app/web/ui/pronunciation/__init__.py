"""The Pronunciation tab: the visitor's own lexicon entries."""
