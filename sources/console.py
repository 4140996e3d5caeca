"""What the console's source pages show: each kind's form (from its ``fields``), labels, and a source's runs."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_lazy as _

from sources.catalog import KindInfo, kinds
from sources.models import RunStatus, Schedule, Source

KIND_LABELS = {"web": _("Web site"), "git": _("Git repository"), "s3": _("S3-compatible bucket"),
               "feishu": _("Feishu (Lark) docs or wiki"), "yuque": _("Yuque knowledge base")}
INPUT_TYPES = {"text": "text", "url": "url", "number": "number", "checkbox": "checkbox", "lines": "textarea",
               "secret": "password"}
RUN_STATUS_CLASSES: dict[str, str] = {RunStatus.QUEUED: "pending", RunStatus.RUNNING: "processing",
                                      RunStatus.SUCCEEDED: "ready", RunStatus.FAILED: "failed",
                                      RunStatus.CANCELLED: "pending"}


@dataclass
class FormRow:
    name: str
    label: str
    type: str
    input_type: str
    required: bool
    help: str
    value: Any


@dataclass
class KindForm:
    kind: str
    label: str
    rows: list[FormRow]          # the settings' inputs; empty: a JSON box (``settings_json``)
    secrets: list[FormRow]
    settings_json: str


def _value(kind_type: str, value: Any) -> Any:
    if kind_type == "lines" and isinstance(value, (list, tuple)):
        return "\n".join(str(v) for v in value)
    if kind_type == "checkbox":
        return bool(value)
    return "" if value is None else value


def kind_form(info: KindInfo, settings: dict | None = None) -> KindForm:
    """The inputs of one kind, filled from ``settings`` (a source being edited) or the fields' defaults."""
    settings = settings or {}
    rows = [FormRow(f.name, str(f.label), f.type, INPUT_TYPES.get(f.type, "text"), f.required, str(f.help),
                    _value(f.type, settings.get(f.name, f.default))) for f in info.settings_fields]
    labels = {f.name: f for f in info.fields}
    secrets = [FormRow(name, str(labels[name].label) if name in labels else name, "secret", "password", False,
                       str(labels[name].help) if name in labels else "", "") for name in info.secret_fields]
    shown = {r.name for r in rows}
    extra = {k: v for k, v in settings.items() if k not in shown} if rows else settings
    return KindForm(kind=info.kind, label=str(KIND_LABELS.get(info.kind, info.kind)), rows=rows, secrets=secrets,
                    settings_json=json.dumps(extra, ensure_ascii=False, indent=2) if not rows else "")


def kind_forms() -> list[KindForm]:
    return [kind_form(info) for info in kinds()]


def kind_label(kind: str) -> str:
    return str(KIND_LABELS.get(kind, kind))


def schedule_text(source: Source) -> str:
    label = str(Schedule(source.schedule).label) if source.schedule in Schedule.values else source.schedule
    return f"{label} {source.cron}" if source.schedule == Schedule.CRON else label
