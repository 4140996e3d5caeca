"""Input and output shapes of the assistants' REST API (assistants/api.py): types and limits only.

The settings' own rules (a model that is configured, the confidence line not under the gate, KBs the
owner can read) stay in ``assistants.services``, which answers them with their codes.
"""
from __future__ import annotations

from datetime import UTC

from django.core.validators import RegexValidator
from rest_framework import serializers

from assistants.models import ApiKey, Assistant, ShareAccess
from assistants.services import MAX_ORIGINS, MAX_SUGGESTED, MAX_SUGGESTED_CHARS
from core.api.fields import ItemList, StrictInput, Text
from knowledge.services.query_input import MAX_KBS, MAX_TOP_K

MAX_TEXT = 8000
MAX_RATE_LIMIT = 100_000
# scheme://host[:port], as assistants.services keeps them (a trailing "/" is dropped there).
ORIGIN = RegexValidator(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$", code="invalid",
                        message="An origin is scheme://host[:port], e.g. https://intranet.example.com.")


def _text(**kwargs) -> Text:
    return Text(required=False, allow_blank=True, max_length=MAX_TEXT, **kwargs)


def _line(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1, help_text=help_text)


class AssistantInput(StrictInput):
    """An assistant's settings; on PATCH any of them. Null (or a blank model) means "each KB's own"."""

    name = Text(max_length=100, trim_whitespace=True)
    description = _text()
    kb_ids = ItemList(child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), min_length=1, max_length=MAX_KBS,
                      help_text="The KBs it answers from, in order (the first one's settings lead); each one the "
                                "caller can read.")
    system_prompt = _text()
    model = Text(required=False, allow_blank=True, max_length=200,
                 help_text="One of the site's configured models; blank: the site's default.")
    top_k = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_TOP_K)
    score_threshold = _line("The not-found gate; null: each KB's own.")
    answer_threshold = _line("The confidence line, never under the gate; null: each KB's own.")
    not_found_text = _text()
    opening_message = _text()
    suggested_questions = ItemList(child=Text(allow_blank=True, max_length=MAX_SUGGESTED_CHARS), required=False,
                                   max_length=MAX_SUGGESTED)
    allowed_origins = ItemList(child=Text(max_length=300, trim_whitespace=False, validators=[ORIGIN]), required=False,
                               max_length=MAX_ORIGINS,
                               help_text="Sites that may embed the chat, matched exactly (scheme, host and port).")
    share_access = serializers.ChoiceField(choices=ShareAccess.choices, required=False)


class AssistantOutput(serializers.ModelSerializer):
    kb_ids = serializers.SerializerMethodField()
    share_path = serializers.SerializerMethodField(help_text="The share link's path; null while sharing is off.")

    class Meta:
        model = Assistant
        fields = ["id", "name", "description", "kb_ids", "system_prompt", "model", "top_k", "score_threshold",
                  "answer_threshold", "not_found_text", "opening_message", "suggested_questions", "allowed_origins",
                  "share_access", "share_path", "created_at", "updated_at"]

    def get_kb_ids(self, assistant: Assistant) -> list[int]:
        links = getattr(assistant, "_prefetched_objects_cache", {}).get("kb_links")
        if links is not None:
            return [link.kb_id for link in sorted(links, key=lambda link: (link.position, link.pk))]
        return assistant.kb_ids()

    def get_share_path(self, assistant: Assistant) -> str | None:
        return share_path(assistant)


def share_path(assistant: Assistant) -> str | None:
    """``/s/<token>/`` while the assistant is shared, else None."""
    if assistant.share_access == ShareAccess.OFF or not assistant.share_token:
        return None
    return f"/s/{assistant.share_token}/"


class KeyInput(StrictInput):
    name = Text(required=False, allow_blank=True, max_length=100, default="", help_text="What the key is for.")
    rate_limit = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_RATE_LIMIT,
                                          help_text="Requests a minute; null: the site's ZHIKU_KEY_RATE_LIMIT.")


class KeyOutput(serializers.ModelSerializer):
    """A key as it is listed: never the key itself, only its first characters."""

    class Meta:
        model = ApiKey
        fields = ["id", "kind", "name", "prefix", "rate_limit", "created_at", "last_used_at"]


class KeyCreatedOutput(KeyOutput):
    key = serializers.CharField(help_text="The key: shown this once, stored only as its SHA-256.")

    class Meta(KeyOutput.Meta):
        fields = KeyOutput.Meta.fields + ["key"]


class ShareRotatedOutput(serializers.Serializer):
    share_token = serializers.CharField()
    share_path = serializers.CharField(allow_null=True, help_text="Null while sharing is off (the token is kept for when it is on).")


class UsageOutput(serializers.Serializer):
    """``assistants.usage.assistant_usage``: what the assistant was used for, over every channel."""

    conversations = serializers.IntegerField()
    conversations_by_channel = serializers.DictField(child=serializers.IntegerField())
    questions = serializers.IntegerField()
    outcomes = serializers.DictField(child=serializers.IntegerField(),
                                     help_text="answered, uncertain, not_found and failed answers.")
    feedback = serializers.DictField(child=serializers.IntegerField(), help_text="Ratings up and down.")
    tokens = serializers.DictField(child=serializers.IntegerField(), help_text="LLM prompt and completion tokens.")
    since = serializers.DateTimeField(allow_null=True, default_timezone=UTC, help_text="The `since` asked for, in UTC.")


class UsageQuery(StrictInput):
    since = serializers.DateTimeField(required=False, help_text="Count only what happened from then on (ISO 8601).")
