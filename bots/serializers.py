"""The REST shapes of chat-bot channels (bots/api.py): credentials are write-only, only their names come back."""
from __future__ import annotations

from rest_framework import serializers

from bots.kinds import MAX_VALUE
from bots.models import BotChannel, BotEvent, BotKind
from bots.services import NAME_LIMIT
from core.api.fields import StrictInput, Text
from core.errors import stored_text


class ChannelInput(StrictInput):
    name = Text(max_length=NAME_LIMIT, trim_whitespace=True, help_text="Unique among the assistant's channels.")
    settings = serializers.DictField(child=Text(max_length=MAX_VALUE, allow_blank=True), required=False,
                                     help_text="The kind's settings (GET /api/bot-kinds/): app_id; corp_id, agent_id, …")
    credentials = serializers.DictField(
        child=Text(max_length=MAX_VALUE, allow_blank=True), required=False,
        help_text="The kind's secrets by name; stored encrypted, never returned. On a change a name given \"\" "
                  "removes that secret and a name left out keeps it.")
    enabled = serializers.BooleanField(required=False)


class ChannelCreateInput(ChannelInput):
    kind = serializers.ChoiceField(choices=BotKind.choices)


class EventOutput(serializers.ModelSerializer):
    error = serializers.SerializerMethodField(help_text="Why the reply failed, in the reader's language; blank otherwise.")
    error_code = serializers.SerializerMethodField()

    class Meta:
        model = BotEvent
        fields = ["id", "event_id", "question", "status", "error_code", "error", "message", "created_at", "answered_at"]

    def get_error(self, event: BotEvent) -> str:
        return stored_text(event.error)[1] if event.error else ""

    def get_error_code(self, event: BotEvent) -> str:
        return stored_text(event.error)[0] if event.error else ""


class ChannelOutput(serializers.ModelSerializer):
    callback_url = serializers.CharField(read_only=True, help_text="The path on this site to give the platform.")
    credential_names = serializers.ListField(child=serializers.CharField(), read_only=True,
                                             help_text="Which secrets are stored (their values are never returned).")

    class Meta:
        model = BotChannel
        fields = ["id", "assistant", "kind", "name", "settings", "credential_names", "enabled", "callback_url",
                  "created_at", "updated_at"]


class StepOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    status = serializers.IntegerField(required=False, help_text="The callback's HTTP status.")
    detail = serializers.CharField(allow_blank=True, help_text="Why the step failed (blank when it passed).")
    checked = serializers.CharField(allow_blank=True, help_text="What the step showed, and what it did not.")


class AddressOutput(serializers.Serializer):
    url = serializers.CharField(help_text="The callback URL as the page shows it (ZHIKU_PUBLIC_URL, else the request's).")
    public = serializers.BooleanField(help_text="False for a loopback or private host, which the platform cannot reach.")
    detail = serializers.CharField(allow_blank=True)


class TestOutput(serializers.Serializer):
    ok = serializers.BooleanField(help_text="No check failed.")
    complete = serializers.BooleanField(help_text="ok, nothing stayed unverified, and the address is public.")
    callback = StepOutput(help_text="A sample event signed here with the stored secrets, through the channel's callback URL.")
    token = StepOutput(allow_null=True, help_text="An access token asked of the platform with the stored credentials "
                                                  "(null for a DingTalk channel without a RobotCode).")
    unverified = serializers.ListField(child=serializers.CharField(),
                                       help_text="What no check here could verify, each with how it can be.")
    address = AddressOutput()


class KindFieldOutput(serializers.Serializer):
    name = serializers.CharField()
    required = serializers.BooleanField()  # type: ignore[assignment]  # a field, not Field.required: DRF's metaclass takes it off the class
    help = serializers.CharField()


class KindOutput(serializers.Serializer):
    kind = serializers.CharField()
    settings = KindFieldOutput(many=True)
    credentials = KindFieldOutput(many=True)
