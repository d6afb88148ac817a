"""The serving catalogue: which engine serves each model, and which voices a request may name."""
