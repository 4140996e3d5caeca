"""Assistants: create and change them, resolve what they may read now, issue their keys, start their turns.

Every protocol adapter (OpenAI-compatible chat, MCP, Dify's external knowledge, the embed and share pages)
goes through here: ``assistant_kbs`` / ``kb_key_scope`` re-check the owner's (or the key creator's) access
at each request, in the database, so an assistant or a key never reaches more than its owner may read now.
"""
from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from django.db import IntegrityError, transaction

from assistants.errors import AssistantsError
from assistants.keys import key_issue
from assistants.models import ApiKey, Assistant, AssistantKB, KeyKind, ShareAccess
from chat.errors import ChatError
from chat.models import Channel, Conversation, Message, MessageStatus
from chat.models import Role as ChatRole
from chat.services import TITLE_CHARS, Turn, answer_settings_for, history_pairs
from core.audit import Action, diff, record, snapshot
from core.errors import CoreError, fail
from knowledge.access import caller_role, kbs_with_caller_access, scope_of_annotated
from knowledge.errors import KnowledgeError
from knowledge.models import KnowledgeBase, Role
from knowledge.not_found import kb_not_found_text
from knowledge.retrieval.protocols import AccessScope
from knowledge.retrieval.request import SearchRequest
from knowledge.retrieval.types import RetrievalResult
from knowledge.selectors import kb_get_for_user, kbs_get_for_user
from knowledge.services.kbs import llm_models
from knowledge.services.query_input import MAX_KBS, MAX_TOP_K, query_clean
from knowledge.services.search import Search, search

MAX_SUGGESTED = 10
MAX_SUGGESTED_CHARS = 200
MAX_ORIGINS = 20
HISTORY_TURNS = 3
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
SETTING_FIELDS = ("name", "description", "system_prompt", "model", "top_k", "score_threshold", "answer_threshold",
                  "not_found_text", "opening_message", "suggested_questions", "allowed_origins", "share_access")


# --- reading and checking -------------------------------------------------------------------------------------

def assistants_of(*, user):
    """The assistants ``user`` owns, most recently changed first."""
    return Assistant.objects.filter(owner=user).prefetch_related("kb_links")


def assistant_get_for_user(*, user, assistant_id: Any) -> Assistant:
    """``user``'s own assistant (a superuser's: any); else NotFound ``assistant_not_found``."""
    qs = Assistant.objects.select_related("owner")
    if not user.is_superuser:
        qs = qs.filter(owner=user)
    try:
        return qs.get(pk=int(assistant_id))
    except (Assistant.DoesNotExist, TypeError, ValueError):
        raise fail(AssistantsError.ASSISTANT_NOT_FOUND) from None


def assistant_kbs(assistant: Assistant) -> tuple[list[KnowledgeBase], AccessScope]:
    """The assistant's KBs its owner may read now, in order, and the owner's scope in them (one statement).

    A KB the owner lost is left out; with none left the assistant is ``assistant_unavailable`` (403).
    """
    ids = assistant.kb_ids()
    owner = assistant.owner
    found = {kb.pk: kb for kb in kbs_with_caller_access(user=owner, kb_ids=ids)} if ids and owner.is_active else {}
    kbs = [found[i] for i in ids if i in found and caller_role(found[i], user=owner) is not None]
    if not kbs:
        raise fail(AssistantsError.ASSISTANT_UNAVAILABLE)
    return kbs, scope_of_annotated(user=owner, kbs=kbs)


def search_overrides(assistant: Assistant) -> dict[str, Any]:
    """The assistant's search settings that replace each KB's (``KBSearchConfig`` fields)."""
    out: dict[str, Any] = {}
    if assistant.top_k is not None:
        out["top_k"] = int(assistant.top_k)
    if assistant.score_threshold is not None:
        out["threshold"] = float(assistant.score_threshold)
    if assistant.answer_threshold is not None:
        out["answer_threshold"] = float(assistant.answer_threshold)
    return out


# --- creating and changing ------------------------------------------------------------------------------------

def _clean_origins(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_ORIGINS:
        raise fail(AssistantsError.INVALID_ASSISTANT, "origins", limit=MAX_ORIGINS, on_field="allowed_origins")
    out = []
    for origin in value:
        origin = str(origin).strip().rstrip("/") if isinstance(origin, str) else ""
        if not _ORIGIN.match(origin):
            raise fail(AssistantsError.INVALID_ASSISTANT, "origins", limit=MAX_ORIGINS, on_field="allowed_origins")
        out.append(origin.lower())
    return list(dict.fromkeys(out))


def _clean_suggested(value: Any) -> list[str]:
    if (not isinstance(value, list) or len(value) > MAX_SUGGESTED or not all(isinstance(q, str) for q in value)
            or any(len(q.strip()) > MAX_SUGGESTED_CHARS for q in value)):
        raise fail(AssistantsError.INVALID_ASSISTANT, "suggested", limit=MAX_SUGGESTED, chars=MAX_SUGGESTED_CHARS,
                   on_field="suggested_questions")
    out = [q.strip() for q in value if q.strip()]
    return out


def _clean_line(value: Any, field: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise fail(KnowledgeError.INVALID_THRESHOLD, field=field) from None
    if not 0 <= number <= 1:
        raise fail(KnowledgeError.INVALID_THRESHOLD, field=field)
    return number


def _clean_settings(values: dict[str, Any]) -> dict[str, Any]:
    # long because: one check per setting, each with its own code, in the order the form shows them
    unknown = sorted(set(values) - set(SETTING_FIELDS))
    if unknown:
        raise fail(CoreError.UNKNOWN_FIELD, fields=", ".join(unknown))
    out = dict(values)
    if "name" in out:
        out["name"] = str(out["name"] or "").strip()[:100]
        if not out["name"]:
            raise fail(AssistantsError.INVALID_ASSISTANT, on_field="name")
    for text in ("description", "system_prompt", "not_found_text", "opening_message"):
        if text in out:
            if not isinstance(out[text], str) or len(out[text]) > 8000:
                raise fail(CoreError.INVALID, "form_text", field=text, limit=8000)
            out[text] = out[text].strip()
    if "model" in out:
        out["model"] = str(out["model"] or "").strip()
        if out["model"] and out["model"] not in llm_models():
            raise fail(KnowledgeError.UNKNOWN_ANSWER_MODEL, models=", ".join(llm_models()) or "-")
    if "top_k" in out and out["top_k"] not in (None, ""):
        try:
            out["top_k"] = int(out["top_k"])
        except (TypeError, ValueError):
            raise fail(KnowledgeError.INVALID_TOP_K, limit=MAX_TOP_K) from None
        if not 1 <= out["top_k"] <= MAX_TOP_K:
            raise fail(KnowledgeError.INVALID_TOP_K, limit=MAX_TOP_K)
    elif "top_k" in out:
        out["top_k"] = None
    for line in ("score_threshold", "answer_threshold"):
        if line in out:
            out[line] = _clean_line(out[line], line)
    if "suggested_questions" in out:
        out["suggested_questions"] = _clean_suggested(out["suggested_questions"])
    if "allowed_origins" in out:
        out["allowed_origins"] = _clean_origins(out["allowed_origins"])
    if "share_access" in out and out["share_access"] not in ShareAccess.values:
        raise fail(AssistantsError.INVALID_ASSISTANT, "share_access", on_field="share_access")
    return out


def _check_lines(assistant: Assistant) -> None:
    gate, line = assistant.score_threshold, assistant.answer_threshold
    if gate is not None and line is not None and line < gate:
        raise fail(KnowledgeError.INVALID_THRESHOLD, "below_gate")


def _set_kbs(*, assistant: Assistant, user, kb_ids: Any) -> None:
    if not isinstance(kb_ids, (list, tuple)) or not kb_ids:
        raise fail(AssistantsError.ASSISTANT_NO_KBS)
    if len(kb_ids) > MAX_KBS:
        raise fail(AssistantsError.INVALID_ASSISTANT, "kb_ids", limit=MAX_KBS, on_field="kb_ids")
    kbs, _ = kbs_get_for_user(user=user, kb_ids=kb_ids)  # each one the owner can read now, else kb_not_found
    AssistantKB.objects.filter(assistant=assistant).delete()
    AssistantKB.objects.bulk_create([AssistantKB(assistant=assistant, kb=kb, position=i) for i, kb in enumerate(kbs)])


def assistant_create(*, owner, name: Any, kb_ids: Any, **values: Any) -> Assistant:
    """A new assistant of ``owner`` over KBs they can read; 400s for bad settings, 409 for a name they already use."""
    values = _clean_settings({"name": name, **values})
    try:
        with transaction.atomic():
            assistant = Assistant(owner=owner, **values)
            _check_lines(assistant)
            if assistant.share_access != ShareAccess.OFF:
                assistant.share_token = secrets.token_urlsafe(18)
            assistant.save()
            _set_kbs(assistant=assistant, user=owner, kb_ids=kb_ids)
            record(Action.ASSISTANT_CREATE, obj=assistant, changes={**values, "kb_ids": ", ".join(map(str, _kb_ids(assistant)))})
    except IntegrityError:
        raise fail(AssistantsError.ASSISTANT_NAME_TAKEN, name=values["name"]) from None
    return assistant


def assistant_update(*, assistant: Assistant, user, kb_ids: Any = None, **values: Any) -> Assistant:
    """Change an assistant's settings (and its KBs when ``kb_ids`` is given, each readable by ``user`` now)."""
    values = _clean_settings(values)
    before = {**snapshot(assistant, values), "kb_ids": _kb_ids(assistant)}
    for name, value in values.items():
        setattr(assistant, name, value)
    _check_lines(assistant)
    if assistant.share_access != ShareAccess.OFF and not assistant.share_token:
        assistant.share_token = secrets.token_urlsafe(18)
    try:
        with transaction.atomic():
            assistant.save()
            if kb_ids is not None:
                _set_kbs(assistant=assistant, user=assistant.owner, kb_ids=kb_ids)
            changed = diff(before, {**snapshot(assistant, values), "kb_ids": _kb_ids(assistant)})
            if changed:
                record(Action.ASSISTANT_UPDATE, obj=assistant, changes=changed)
    except IntegrityError:
        raise fail(AssistantsError.ASSISTANT_NAME_TAKEN, name=assistant.name) from None
    return assistant


def assistant_delete(*, assistant: Assistant) -> None:
    """Delete the assistant with its keys and conversations."""
    with transaction.atomic():
        record(Action.ASSISTANT_DELETE, obj=assistant, changes={"name": assistant.name, "kb_ids": ", ".join(map(str, _kb_ids(assistant)))})
        assistant.delete()


def _kb_ids(assistant: Assistant) -> list[int]:
    return list(AssistantKB.objects.filter(assistant=assistant).order_by("position").values_list("kb_id", flat=True))


def share_token_rotate(*, assistant: Assistant) -> str:
    """A new share link token: the old link stops working at once."""
    with transaction.atomic():
        assistant.share_token = secrets.token_urlsafe(18)
        assistant.save(update_fields=["share_token", "updated_at"])
        record(Action.ASSISTANT_SHARE_ROTATE, obj=assistant)
    return assistant.share_token


# --- keys -----------------------------------------------------------------------------------------------------

def assistant_key_create(*, user, assistant: Assistant, name: str = "", rate_limit: int | None = None) -> tuple[ApiKey, str]:
    """A new key of ``user``'s assistant and the key (shown once)."""
    if assistant.owner_id != user.pk and not user.is_superuser:
        raise fail(AssistantsError.ASSISTANT_NOT_FOUND)
    return key_issue(created_by=user, assistant=assistant, name=name, rate_limit=rate_limit)


def kb_key_create(*, user, kb_id: Any, name: str = "", rate_limit: int | None = None) -> tuple[ApiKey, str]:
    """A new read-only retrieval key of a KB ``user`` owns, and the key (shown once)."""
    kb = kb_get_for_user(user=user, kb_id=kb_id, min_role=Role.OWNER)
    return key_issue(created_by=user, kb=kb, name=name, rate_limit=rate_limit)


def kb_key_scope(key: ApiKey) -> tuple[KnowledgeBase, AccessScope]:
    """A KB key's KB as its creator may read it now, and their scope; ``kb_not_found`` when they can't."""
    kbs, scope = kbs_get_for_user(user=key.created_by, kb_ids=[key.kb_id])
    return kbs[0], scope


def key_kbs(key: ApiKey) -> tuple[list[KnowledgeBase], AccessScope, dict[str, Any]]:
    """What ``key`` may search now: (KBs, scope, search overrides) — an assistant's KBs, or a KB key's one KB."""
    if key.kind == KeyKind.ASSISTANT:
        kbs, scope = assistant_kbs(key.target_assistant)
        return kbs, scope, search_overrides(key.target_assistant)
    kb, scope = kb_key_scope(key)
    return [kb], scope, {}


def key_search(key: ApiKey, request: SearchRequest, *, kb_ids: Sequence[int] | None = None) -> RetrievalResult:
    """Search what ``key`` reaches now; ``kb_ids`` narrows it to some of those KBs (any other id: kb_not_found)."""
    kbs, scope, overrides = key_kbs(key)
    if kb_ids:
        by_id = {kb.pk: kb for kb in kbs}
        wanted = [int(k) for k in kb_ids]
        if any(k not in by_id for k in wanted):
            raise fail(KnowledgeError.KB_NOT_FOUND)
        kbs = [by_id[k] for k in dict.fromkeys(wanted)]
    return search(Search(request, kbs=kbs, scope=scope, overrides=overrides))


# --- turns ----------------------------------------------------------------------------------------------------

def _clean_history(history: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    pairs = [(r, c) for r, c in history if r in (ChatRole.USER, ChatRole.ASSISTANT) and c]
    return pairs[-2 * HISTORY_TURNS:]


def assistant_turn_start(*, assistant: Assistant, question: Any, channel: str = Channel.API, visitor: str = "",
                         conversation_id: Any = None, history: Sequence[tuple[str, str]] | None = None,
                         max_tokens: int | None = None) -> Turn:
    """A turn of ``assistant`` as its owner (``chat.services.turn_stream`` answers it), recorded for its usage.

    ``history``: the earlier (role, content) pairs as the client sent them (the OpenAI-compatible API);
    without it, the conversation ``conversation_id`` of this assistant and ``visitor`` (a share link's) gives
    them. The KBs are the ones the owner may read now (``assistant_kbs``). ``max_tokens``: the caller's cap on
    the answer's LLM tokens (the OpenAI-compatible API's ``max_tokens`` and its successors).
    """
    question = query_clean(question)
    kbs, scope = assistant_kbs(assistant)
    owner = assistant.owner
    ids = [kb.pk for kb in kbs]
    with transaction.atomic():
        conversation, earlier = None, []
        if conversation_id is not None:
            try:
                conversation = Conversation.objects.select_for_update().get(
                    pk=int(conversation_id), assistant=assistant, visitor=visitor or "")
            except (Conversation.DoesNotExist, TypeError, ValueError):
                raise fail(ChatError.CONVERSATION_NOT_FOUND) from None
            earlier = list(conversation.messages.order_by("-id")[: 2 * HISTORY_TURNS])[::-1]
            conversation.kb_ids = ids
            conversation.save(update_fields=["kb_ids", "updated_at"])
        else:
            conversation = Conversation.objects.create(user=owner, assistant=assistant, channel=channel,
                                                       visitor=visitor or "", title=question[:TITLE_CHARS], kb_ids=ids)
        asked = Message.objects.create(conversation=conversation, role=ChatRole.USER, content=question)
        answer = Message.objects.create(conversation=conversation, role=ChatRole.ASSISTANT, status=MessageStatus.INCOMPLETE)
    pairs = _clean_history(history) if history is not None else history_pairs(user=owner, messages=earlier)
    settings = answer_settings_for(kbs)
    settings = replace(settings, system_prompt=assistant.system_prompt or settings.system_prompt,
                       model=assistant.model or settings.model, max_tokens=max_tokens)
    return Turn(
        user=owner, conversation_id=conversation.pk, title=conversation.title, user_message_id=asked.pk,
        message_id=answer.pk, kb_ids=ids, kbs=kbs, scope=scope, question=question,
        not_found_text=assistant.not_found_text or kb_not_found_text(kbs[0], question), history=pairs,
        previous_queries=[c for r, c in pairs if r == ChatRole.USER], answer=settings,
        search_overrides=search_overrides(assistant),
    )
