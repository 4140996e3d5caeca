"""The API's shapes of sources and runs: credentials are write-only (only their names come back), and a KB's
viewers see a source without its settings."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import StrictInput, Text
from sources.models import Schedule, Source, SourceRun
from sources.services.sources import NAME_LIMIT

CREDENTIAL_MAX = 8000
CREDENTIALS_MAX = 20


class RunErrorOutput(serializers.Serializer):
    key = serializers.CharField(help_text="The item's key at the source (a URL, a path, an object key, a doc token).")
    url = serializers.CharField(help_text="Where the item is read; may be blank.")
    code = serializers.CharField(help_text="A registered error code (docs/api.md).")
    message = serializers.CharField()


class RunOutput(serializers.ModelSerializer):
    errors = RunErrorOutput(  # type: ignore[assignment]  # a field, not Serializer.errors: DRF's metaclass takes it off the class
        many=True, help_text="Per-item errors (the first ZHIKU_SOURCES_MAX_RUN_ERRORS; `failed` counts them all).")

    class Meta:
        model = SourceRun
        fields = ["id", "source", "status", "trigger", "created_at", "started_at", "finished_at", "heartbeat_at",
                  "added", "updated", "unchanged", "removed", "failed", "complete", "error_code", "note", "errors",
                  "cancel_requested"]


class SourceOutput(serializers.ModelSerializer):
    settings = serializers.SerializerMethodField(help_text="The kind's settings; null for a KB's viewers.")
    last_run = serializers.SerializerMethodField()
    credential_names = serializers.SerializerMethodField(
        help_text="Which credentials are stored (their values are never returned); empty for a KB's viewers.")

    class Meta:
        model = Source
        fields = ["id", "kb", "kind", "name", "settings", "credential_names", "schedule", "cron", "paused",
                  "next_run_at", "created_at", "updated_at", "last_run"]

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_settings(self, source) -> dict | None:
        return source.settings if self.context.get("manage", False) else None

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_credential_names(self, source) -> list[str]:
        return list(source.credential_names) if self.context.get("manage", False) else []

    @extend_schema_field(RunOutput(allow_null=True))
    def get_last_run(self, source) -> dict | None:
        run = self.context.get("last_runs", {}).get(source.pk)
        return RunOutput(run).data if run is not None else None


class SourceInput(StrictInput):
    name = Text(max_length=NAME_LIMIT, help_text="Unique in the KB.")
    settings = serializers.DictField(required=False, default=dict,
                                     help_text="The kind's settings, checked by the kind (docs/sources/<kind>.md).")
    credentials = serializers.DictField(
        child=Text(max_length=CREDENTIAL_MAX, allow_blank=True), required=False, default=dict,
        help_text="The kind's secrets by name; stored encrypted, never returned. On a change a name given \"\" "
                  "removes that secret and a name left out keeps it.")
    schedule = serializers.ChoiceField(choices=Schedule.choices, required=False, default=Schedule.MANUAL)
    cron = Text(max_length=100, required=False, allow_blank=True, default="",
                help_text="With schedule cron: five fields (minute hour day month weekday), in the site's time zone.")
    paused = serializers.BooleanField(required=False, default=False)


class SourceCreateInput(SourceInput):
    kind = Text(max_length=30, help_text="web, git, s3, feishu, yuque (those this installation offers: GET /api/source-kinds/).")


class SourceKindFieldOutput(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.label: DRF's metaclass takes it off the class
    type = serializers.CharField()
    required = serializers.BooleanField()  # type: ignore[assignment]  # a field, not Field.required: DRF's metaclass takes it off the class
    help = serializers.CharField()


class SourceKindOutput(serializers.Serializer):
    kind = serializers.CharField()
    secret_fields = serializers.ListField(child=serializers.CharField())
    fields = SourceKindFieldOutput(many=True)  # type: ignore[assignment]  # a field, not Serializer.fields: DRF's metaclass takes it off the class
