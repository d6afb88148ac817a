"""The API tab: how to call the server from code."""
