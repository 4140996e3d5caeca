"""Who calls an MCP resource: an assistant key, a KB key, or an OAuth access token bound to that resource.

Checked at every request, in the database (no cache), so a revoked key or token, or a person who lost what the
token names, is refused at the next request. A token is found by its SHA-256 (the toolkit stores no token in clear,
config/mcp_auth.py); it must be live, hold the ``mcp`` scope and one target, name this very resource (RFC 8707:
a token for ``/mcp/`` is refused at ``/mcp/kb/<id>/`` and the other way round), and its person must still be
active and still own the assistant (or reach the KB; each search re-checks that in its query). It then reads like
a key of that target created by that person (``assistants.services.key_kbs``), an unsaved ``ApiKey``.
"""
from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from assistants.errors import AssistantsError
from assistants.keys import KEY_PREFIX, bearer_key, key_authenticate
from assistants.mcp_auth.oauth import MCP_SCOPE, target_of
from assistants.mcp_auth.resources import same_resource
from assistants.models import ApiKey, Assistant, KeyKind
from assistants.ratelimit import minute_count
from core.errors import fail
from knowledge.models import KnowledgeBase


def _key_at(key: str, kb_id: int | None) -> ApiKey:
    row = key_authenticate(key)
    if kb_id is not None and (row.kind != KeyKind.KB or row.kb_id != kb_id):
        raise fail(AssistantsError.TOKEN_WRONG_RESOURCE)
    return row


def _rate_check(token) -> None:
    """A token's requests a minute, counted per person and client like a key's (``ZHIKU_KEY_RATE_LIMIT``)."""
    limit = int(settings.ZHIKU_KEY_RATE_LIMIT)
    now = time.time()
    if minute_count("mcptoken", f"{token.user_id}-{token.application_id}", int(now // 60)) > limit:
        retry = max(1, 60 - int(now % 60))
        raise fail(AssistantsError.KEY_RATE_LIMITED, limit=limit, retry=retry, extra={"retry_after": retry})


def _target_row(user, kind: str, pk: int) -> ApiKey:
    if kind == "assistant":
        assistant = Assistant.objects.select_related("owner").filter(pk=pk).first()
        if assistant is None or (assistant.owner_id != user.pk and not user.is_superuser):
            raise fail(AssistantsError.TOKEN_INVALID)
        return ApiKey(kind=KeyKind.ASSISTANT, assistant=assistant, created_by=user)
    kb = KnowledgeBase.objects.filter(pk=pk).first()
    if kb is None:
        raise fail(AssistantsError.TOKEN_INVALID)
    return ApiKey(kind=KeyKind.KB, kb=kb, created_by=user)


def token_authenticate(token: str, *, resource: str, kb_id: int | None) -> tuple[ApiKey, str]:
    """The target of OAuth access token ``token`` at ``resource`` as an unsaved key row, and the visitor its
    conversations belong to; ``token_invalid`` / ``token_wrong_resource`` (401), ``key_rate_limited`` (429)."""
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
    row = (get_access_token_model().objects.select_related("user", "application")
           .filter(token_checksum=digest, expires__gt=timezone.now()).first())
    if row is None or row.user is None or not row.user.is_active or row.application is None:
        raise fail(AssistantsError.TOKEN_INVALID)
    scopes = row.scope.split()
    target = target_of(scopes)
    if MCP_SCOPE not in scopes or target is None:
        raise fail(AssistantsError.TOKEN_INVALID)
    if not row.resource or not any(same_resource(r, resource) for r in row.resource):
        raise fail(AssistantsError.TOKEN_WRONG_RESOURCE)
    kind, pk = target
    if kb_id is not None and (kind, pk) != ("kb", kb_id):
        raise fail(AssistantsError.TOKEN_WRONG_RESOURCE)
    _rate_check(row)
    return _target_row(row.user, kind, pk), f"mcp-oauth-{row.user_id}-{row.application_id}-{kind}-{pk}"


def mcp_authenticate(header: str, *, resource: str, kb_id: int | None) -> tuple[str, ApiKey, str]:
    """``(credential, key row, visitor)`` of an ``Authorization: Bearer`` header at an MCP resource
    (``kb_id``: the per-KB endpoint's KB): an API key (``zk-…``) or an OAuth access token."""
    credential = bearer_key(header)
    if credential.startswith(KEY_PREFIX):
        return credential, _key_at(credential, kb_id), ""
    row, visitor = token_authenticate(credential, resource=resource, kb_id=kb_id)
    return credential, row, visitor
