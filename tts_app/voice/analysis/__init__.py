"""What a reference clip holds: ingestion, noise, pitch, spectra and its voice statistics."""
