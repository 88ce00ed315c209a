"""The HTTP/WebSocket server surface: FastAPI app, auth, tenancy and the live sessions it drives."""
