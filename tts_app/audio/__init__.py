"""Audio I/O and formats: WAV/PCM encoding, the API's response formats, where ffmpeg is."""
