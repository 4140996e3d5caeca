"""Sources: add, edit and remove them; their credentials, encrypted at rest and never read back but by the runner."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from core.audit import Action, diff, record, snapshot
from core.errors import CODES, ApplicationError, ValidationFailed, fail, failure_text
from knowledge.models import Document, KnowledgeBase
from knowledge.services.documents import document_delete
from providers.secrets import InvalidToken, secret_decrypt, secret_encrypt
from sources.catalog import load_kinds
from sources.errors import SourcesError
from sources.kinds.base import REGISTRY, Connector, SourceError, connector_for
from sources.models import Schedule, Source
from sources.timing import cron_check, next_run_at

NAME_LIMIT = 200
_UNSET: Any = object()


def as_application_error(exc: SourceError) -> ApplicationError:
    """A connector's ``SourceError`` as the application error its registered code names (sources/errors.py), the
    connector's own sentence as the ``detail``."""
    entry = CODES.get(exc.code)
    error = entry.error if entry is not None and entry.error is not None else ValidationFailed
    return error(failure_text(exc.code, exc.message), code=exc.code if entry is not None else "source_failed",
                 extra={"detail": exc.message})


def kind_class(kind: Any) -> type[Connector]:
    """The connector class of ``kind``; 400 ``source_kind_unknown`` when there is none."""
    if not isinstance(kind, str) or not kind.strip():
        raise fail(SourcesError.SOURCE_INVALID)
    if kind.strip() not in REGISTRY:
        load_kinds()
    try:
        return connector_for(kind.strip())
    except SourceError as exc:
        raise as_application_error(exc) from None


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > NAME_LIMIT:
        raise fail(SourcesError.SOURCE_INVALID, "name", limit=NAME_LIMIT, on_field="name")
    return name.strip()


def _clean_settings(cls: type[Connector], settings: Any) -> dict[str, Any]:
    if not isinstance(settings, Mapping):
        raise fail(SourcesError.SOURCE_INVALID, "settings", on_field="settings")
    try:
        clean = dict(cls.clean_settings(dict(settings)))
        check = getattr(cls, "check_address", None)   # an address the server will refuse: refused now, not at a run
        if check is not None:
            check(clean)
        return clean
    except SourceError as exc:
        raise as_application_error(exc) from None


def _clean_credentials(cls: type[Connector], credentials: Any) -> dict[str, str]:
    names = tuple(getattr(cls, "secret_fields", ()))
    if not isinstance(credentials, Mapping) or any(
            not isinstance(k, str) or k not in names or not isinstance(v, str) for k, v in credentials.items()):
        raise fail(SourcesError.SOURCE_INVALID, "credentials", names=", ".join(names) or "-", on_field="credentials")
    return dict(credentials)


def _clean_schedule(schedule: Any, cron: Any) -> tuple[str, str]:
    if schedule not in Schedule.values:
        raise fail(SourcesError.SOURCE_INVALID, "schedule", on_field="schedule")
    if schedule != Schedule.CRON:
        return schedule, ""
    if not isinstance(cron, str) or not cron_check(cron):
        raise fail(SourcesError.SOURCE_INVALID, "cron", on_field="cron")
    return schedule, " ".join(cron.split())


def source_credentials(source: Source) -> dict[str, str]:
    """The decrypted credentials (the runner's; nothing shows them); 400 when the secrets key no longer opens them."""
    if not source.credentials:
        return {}
    try:
        return json.loads(secret_decrypt(source.credentials))
    except InvalidToken:
        raise fail(SourcesError.SOURCE_CREDENTIALS_UNREADABLE) from None


def _store_credentials(source: Source, credentials: dict[str, str]) -> None:
    kept = {k: v for k, v in credentials.items() if v}
    source.credentials = secret_encrypt(json.dumps(kept, sort_keys=True)) if kept else ""
    source.credential_names = sorted(kept)


def _save(source: Source) -> Source:
    try:
        with transaction.atomic():
            source.save()
    except IntegrityError:
        raise fail(SourcesError.SOURCE_INVALID, "name_taken", name=source.name, on_field="name") from None
    return source


def source_create(*, kb: KnowledgeBase, user, kind: Any, name: Any, settings: Any = None, credentials: Any = None,
                  schedule: Any = Schedule.MANUAL, cron: Any = "", paused: Any = False) -> Source:
    """Add a source to ``kb``: every value is checked (the kind's ``clean_settings`` for its settings) before it is stored."""
    cls = kind_class(kind)
    if not isinstance(paused, bool):
        raise fail(SourcesError.SOURCE_INVALID, "paused", on_field="paused")
    schedule, cron = _clean_schedule(schedule, cron)
    source = Source(kb=kb, kind=cls.kind, name=_clean_name(name), settings=_clean_settings(cls, settings or {}),
                    schedule=schedule, cron=cron, paused=paused,
                    created_by=user if (user is not None and user.is_authenticated) else None)
    _store_credentials(source, _clean_credentials(cls, credentials or {}))
    source.next_run_at = next_run_at(source)
    with transaction.atomic():
        _save(source)
        record(Action.SOURCE_CREATE, obj=source, changes=diff({}, {**snapshot(source, _AUDITED), "kind": source.kind}))
    return source


# What a source's audit entries compare (credentials appear only as a changed name list, masked by audit.record).
_AUDITED = ("name", "settings", "schedule", "cron", "paused")


def source_update(*, source: Source, name: Any = _UNSET, settings: Any = _UNSET, credentials: Any = _UNSET,
                  schedule: Any = _UNSET, cron: Any = _UNSET, paused: Any = _UNSET) -> Source:
    """Change what is given. ``credentials`` merges: a name given a value replaces it, a name given "" removes it."""
    cls = kind_class(source.kind)
    before = snapshot(source, _AUDITED)
    if name is not _UNSET:
        source.name = _clean_name(name)
    if settings is not _UNSET:
        source.settings = _clean_settings(cls, settings)
    if credentials is not _UNSET:
        merged = {**source_credentials(source), **_clean_credentials(cls, credentials)} if credentials else None
        if merged is not None:
            _store_credentials(source, merged)
    if schedule is not _UNSET or cron is not _UNSET:
        source.schedule, source.cron = _clean_schedule(source.schedule if schedule is _UNSET else schedule,
                                                       source.cron if cron is _UNSET else cron)
    if paused is not _UNSET:
        if not isinstance(paused, bool):
            raise fail(SourcesError.SOURCE_INVALID, "paused", on_field="paused")
        source.paused = paused
    source.next_run_at = next_run_at(source)
    with transaction.atomic():
        _save(source)
        changes = diff(before, snapshot(source, _AUDITED))
        if credentials is not _UNSET and credentials:
            changes["credentials"] = [None, sorted(credentials)]  # which were set, never their values
        if changes:
            record(Action.SOURCE_UPDATE, obj=source, changes=changes)
    return source


def source_delete(*, source: Source, keep_documents: bool = False) -> None:
    """Remove the source and its history; its documents too unless ``keep_documents`` (then they stay as uploads)."""
    names = list(source.items.values_list("name", flat=True))
    kb_id = source.kb_id
    record(Action.SOURCE_DELETE, obj=source, changes={"keep_documents": [None, keep_documents]})
    source.delete()
    if keep_documents:
        return
    for document in Document.objects.filter(kb_id=kb_id, source_name__in=names):
        try:
            document_delete(document=document)
        except ApplicationError:  # a version deleted meanwhile (404): nothing left to do
            continue
