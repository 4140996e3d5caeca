"""Routes of share links (assistants/share.py) and the embedded chat (assistants/embed.py)."""
from django.urls import path

from assistants import embed, share

app_name = "assistants_visitor"

urlpatterns = [
    path("s/<str:token>/", share.share_page, name="share"),
    path("s/<str:token>/chat/stream/", share.share_stream, name="share-stream"),
    path("s/<str:token>/conversations/", share.share_conversations, name="share-conversations"),
    path("s/<str:token>/conversations/<int:conversation_id>/", share.share_conversations, name="share-conversation"),
    path("s/<str:token>/feedback/", share.share_feedback, name="share-feedback"),
    path("embed/<int:assistant_id>.js", embed.embed_script, name="embed-script"),
    path("embed/<int:assistant_id>/chat/", embed.embed_chat, name="embed-chat"),
    path("embed/<int:assistant_id>/chat/stream/", embed.embed_stream, name="embed-stream"),
    path("embed/<int:assistant_id>/conversations/", embed.embed_conversations, name="embed-conversations"),
    path("embed/<int:assistant_id>/conversations/<int:conversation_id>/", embed.embed_conversations,
         name="embed-conversation"),
    path("embed/<int:assistant_id>/feedback/", embed.embed_feedback, name="embed-feedback"),
]
