"""The assistants' routes under /api/ (ids use <int:> converters, so a malformed id is a 404)."""
from django.urls import path

from assistants import api, sse

app_name = "assistants-api"

urlpatterns = [
    path("assistants/", api.AssistantListView.as_view(), name="assistant-list"),
    path("assistants/<int:assistant_id>/", api.AssistantDetailView.as_view(), name="assistant-detail"),
    path("assistants/<int:assistant_id>/keys/", api.AssistantKeyListView.as_view(), name="assistant-key-list"),
    path("assistants/<int:assistant_id>/keys/<int:key_id>/", api.AssistantKeyDetailView.as_view(), name="assistant-key-detail"),
    path("assistants/<int:assistant_id>/usage/", api.AssistantUsageView.as_view(), name="assistant-usage"),
    path("assistants/<int:assistant_id>/share/rotate/", api.ShareRotateView.as_view(), name="assistant-share-rotate"),
    path("assistants/<int:assistant_id>/chat/stream/", sse.assistant_stream, name="assistant-chat-stream"),
    path("kbs/<int:kb_id>/keys/", api.KBKeyListView.as_view(), name="kb-key-list"),
    path("kbs/<int:kb_id>/keys/<int:key_id>/", api.KBKeyDetailView.as_view(), name="kb-key-detail"),
]
