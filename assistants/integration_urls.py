"""Where the protocol adapters live (issue 24): the OpenAI-compatible API under /v1/ (chat completions, responses,
models), Dify's external knowledge at /dify."""
from django.urls import path, re_path

from assistants import dify, openai_api, openai_responses

urlpatterns = [
    re_path(r"^v1/chat/completions/?$", openai_api.chat_completions, name="openai-chat-completions"),
    re_path(r"^v1/responses/?$", openai_responses.responses, name="openai-responses"),
    re_path(r"^v1/models/?$", openai_api.models, name="openai-models"),
    path("v1/models/<str:model_id>", openai_api.models, name="openai-model"),
    re_path(r"^v1/(?P<rest>.*)$", openai_api.not_found),
    re_path(r"^dify/retrieval/?$", dify.retrieval, name="dify-retrieval"),
    re_path(r"^dify/(?P<rest>.*)$", dify.not_found),
]
