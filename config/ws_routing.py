"""Websocket routes (the chat consumer is added by the chat app)."""
websocket_urlpatterns: list = []
