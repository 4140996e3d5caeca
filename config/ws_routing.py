"""Websocket routes."""
from django.urls import path

from chat.consumers import ChatConsumer

websocket_urlpatterns: list = [
    path("ws/chat/", ChatConsumer.as_asgi()),
]
