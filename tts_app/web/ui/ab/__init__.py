"""The A/B listening tab: two takes of one line that differ in one setting."""
