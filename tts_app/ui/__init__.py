"""The Gradio user interface: layout, handlers, A/B listening and take history."""
