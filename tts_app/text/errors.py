"""Errors of the text side."""


class TextError(ValueError):
    """Text that cannot be spoken; the message is one line for the user."""
