"""ASGI guards in front of every route: headers, bodies, connections, CORS, uploads."""
