"""HTTP APIs mounted beside the Gradio app."""
