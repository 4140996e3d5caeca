"""App config for chat."""
from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
