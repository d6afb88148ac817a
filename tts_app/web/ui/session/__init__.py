"""What a visitor's session holds (files, saved voices, pronunciations, running requests) and its cleanup."""
