"""Chat pages."""
from django.urls import path

from chat.health_views import health_page
from chat.views import chat_page

app_name = "chat"

urlpatterns = [
    path("chat/", chat_page, name="chat"),
    path("kbs/<int:kb_id>/health/", health_page, name="kb-health"),
]
