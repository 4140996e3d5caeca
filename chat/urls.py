"""Chat pages."""
from django.urls import path

from chat.views import chat_page

app_name = "chat"

urlpatterns = [
    path("chat/", chat_page, name="chat"),
]
