"""The chat-bot channels' routes under /api/ (ids use <int:> converters, so a malformed id is a 404)."""
from django.urls import path

from bots import api

app_name = "bots-api"

urlpatterns = [
    path("bot-kinds/", api.KindListView.as_view(), name="bot-kind-list"),
    path("assistants/<int:assistant_id>/channels/", api.ChannelListView.as_view(), name="channel-list"),
    path("assistants/<int:assistant_id>/channels/<int:channel_id>/", api.ChannelDetailView.as_view(),
         name="channel-detail"),
    path("assistants/<int:assistant_id>/channels/<int:channel_id>/events/", api.ChannelEventsView.as_view(),
         name="channel-events"),
    path("assistants/<int:assistant_id>/channels/<int:channel_id>/test/", api.ChannelTestView.as_view(),
         name="channel-test"),
]
