"""Writing an audit entry: ``record(action, ...)``, in the caller's transaction, with secrets masked.

An entry is written in the same transaction as the change it describes, so a change that rolls back
leaves no entry behind (and an entry is never written for a change that did not happen). Values whose
names say they are secret (keys, passwords, tokens, digests) are written as ``"***"``, never as themselves.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.db import models

from core.audit.actions import Action
from core.audit.context import who

MASK = "***"
SECRET_NAMES = re.compile(r"(^|_)(key|keys|secret|password|passwd|token|digest|api_key|credentials?)($|_)", re.I)
# actor=NOBODY: no actor, not even the request's (an account deleting itself cannot be the actor of its own row).
NOBODY = object()
LIST_LIMIT = 100  # a KB's user words or synonyms: the first hundred
TEXT_LIMIT = 500  # longer texts (a chunk's content) are cut: the entry says what changed, not the whole document


def is_secret(name: str) -> bool:
    return bool(SECRET_NAMES.search(str(name)))


def _plain(value: Any) -> Any:
    """A JSON-safe, bounded form of ``value``."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= TEXT_LIMIT else value[:TEXT_LIMIT] + "…"
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): MASK if is_secret(k) else _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        return [_plain(v) for v in items[:LIST_LIMIT]] + (["…"] if len(items) > LIST_LIMIT else [])
    return _plain(str(value))


def masked(changes: Mapping[str, Any] | None) -> dict[str, Any]:
    """``changes`` with every secret-named value replaced by ``"***"`` (before and after alike)."""
    out: dict[str, Any] = {}
    for name, value in (changes or {}).items():
        if is_secret(name):
            out[str(name)] = [MASK, MASK] if isinstance(value, (list, tuple)) and len(value) == 2 else MASK
        else:
            out[str(name)] = _plain(value)
    return out


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``{"field": [before, after]}`` for each field whose value changed."""
    return {name: [before.get(name), value] for name, value in after.items() if before.get(name) != value}


def snapshot(obj: object, fields: Iterable[str]) -> dict[str, Any]:
    """The values of ``fields`` of ``obj``, to compare with ``diff`` after a change."""
    return {name: getattr(obj, name) for name in fields}


def _kb_of(obj: models.Model | None, kb: Any) -> tuple[int | None, str]:
    if kb is None and obj is not None:
        kb = obj if obj._meta.label == "knowledge.KnowledgeBase" else getattr(obj, "kb", None)
    if kb is None:
        return None, ""
    return kb.pk, str(kb.name)[:200]


def record(action: str, *, actor: Any = None, obj: models.Model | None = None, kb: Any = None, changes: Mapping[str, Any] | None = None,
           address: str | None = None, actor_name: str | None = None, object_repr: str | None = None,
           request: object | None = None) -> models.Model:
    """Write one audit entry for ``action`` (an ``audit.models.Action`` value) and return it (an ``audit.AuditEntry``).

    The actor and address come from the current request (``core.audit.context``) unless given; ``obj`` is the
    row acted on (its type, id and text are kept); ``kb`` defaults to ``obj`` itself when it is a KB or
    to ``obj.kb``. Call it inside the transaction that makes the change, before a deleted row is gone.
    """
    entry_model = apps.get_model("audit", "AuditEntry")
    Action(action)  # a value outside the vocabulary is a programming error
    ctx_actor, ctx_address, origin = who(request)
    if actor is NOBODY:
        actor, actor_name = None, actor_name if actor_name is not None else getattr(ctx_actor, "username", "")
    else:
        actor = actor if actor is not None else ctx_actor
    kb_id, kb_name = _kb_of(obj, kb)
    return entry_model.objects.create(
        action=action, actor=actor if actor is not None and actor.pk is not None else None,
        actor_name=(actor_name if actor_name is not None else (actor.get_username() if actor is not None else ""))[:150],
        origin=origin, object_type=(obj._meta.model_name or "") if obj is not None else "",
        object_id=str(obj.pk) if obj is not None and obj.pk is not None else "",
        object_repr=(object_repr if object_repr is not None else (str(obj) if obj is not None else ""))[:200],
        kb_id=kb_id, kb_name=kb_name, address=address or ctx_address, changes=masked(changes),
    )
