"""Chat routes under /api/ (ids use <int:> converters, so a malformed id is a 404)."""
from django.urls import path

from chat import api, health_api, sse

app_name = "chat-api"

urlpatterns = [
    path("conversations/", api.ConversationListView.as_view(), name="conversation-list"),
    path("conversations/<int:conversation_id>/", api.ConversationDetailView.as_view(), name="conversation-detail"),
    path("messages/<int:message_id>/feedback/", api.FeedbackView.as_view(), name="message-feedback"),
    path("chat/stream/", sse.chat_stream, name="chat-stream"),
    path("tools/search/", api.ToolSearchView.as_view(), name="tool-search"),
    path("kbs/<int:kb_id>/health/", health_api.HealthView.as_view(), name="kb-health"),
    path("kbs/<int:kb_id>/health/faq/", health_api.HealthFAQView.as_view(), name="kb-health-faq"),
    path("kbs/<int:kb_id>/health/labels/", health_api.HealthLabelView.as_view(), name="kb-health-label"),
    path("kbs/<int:kb_id>/health/golden/", health_api.HealthGoldenView.as_view(), name="kb-health-golden"),
]
