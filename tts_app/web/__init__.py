"""The web layer: the server, its guards, the HTTP API (api/) and the page (ui/)."""
