"""Voice v3 (issue 27): adapting the embedded voice's HiFi-GAN decoder to a reference clip.

Training-time code only (torch); nothing here is imported by the server yet.
"""
