"""The Speak tab: the voice, text and settings form, Generate and Stop, the live stream and the run's outputs."""
