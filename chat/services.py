"""Chat services: start a turn, stream its answer (rewrite → retrieve → not found | generate → persist), feedback.

``turn_start`` does every check and write that must happen before anything is searched; ``turn_stream`` yields the
protocol's events (docs/chat.md) and settles the assistant message however the stream ends. The websocket consumer
and the SSE view only move those events.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.db import close_old_connections, transaction
from django.utils import timezone
from django.utils.translation import gettext

from chat import selectors
from chat.answering import AnswerPlan, answer_outcome, answer_plan
from chat.errors import ChatError
from chat.extractive import is_list_question
from chat.history import readable_view
from chat.llm import LLMConfig, LLMError, llm_complete, llm_config_for, usage_add
from chat.models import Conversation, Feedback, Message, MessageStatus, Rating, Role
from chat.prompts import rewrite_messages
from chat.rewrite import Rewrite, needs_context, rewrite_clean, rewrite_fallback
from core.errors import ApplicationError, fail
from core.jsonable import number
from knowledge.models import AnswerMode, KnowledgeBase
from knowledge.not_found import kb_not_found_text
from knowledge.retrieval.protocols import AccessScope
from knowledge.retrieval.request import SearchRequest
from knowledge.retrieval.types import RetrievalResult
from knowledge.selectors import kbs_get_for_user
from knowledge.services.query_input import kb_ids_clean, kb_ids_required, query_clean
from knowledge.services.search import Search, search
from providers.catalog import choice_get

logger = logging.getLogger(__name__)

TITLE_CHARS = 40
USE_SETTINGS: Any = object()
"""``turn_stream(llm=USE_SETTINGS)``: read the LLM configuration from settings at call time."""


def in_thread(func):
    """``func`` for async code: run in a worker thread, closing that thread's connection afterwards.

    Like channels' ``database_sync_to_async``, on the loop's executor rather than
    the one thread-sensitive thread, so concurrent chats don't queue behind each
    other's searches. The connection is closed here too because channels' test
    communicator disables its own clean-up.
    """
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        finally:
            close_old_connections()

    return database_sync_to_async(run, thread_sensitive=False)


@dataclass(frozen=True)
class AnswerSettings:
    """How a turn is answered, from its KBs' answer settings (docs/chat.md "Per-KB answer settings").

    One KB: its settings. Several: extractive when any of them says so (its
    text must not reach a model), the first KB's model and system prompt (as
    its not-found text), the largest source cap (none when any KB has none),
    and each KB's own FAQ threshold for its own FAQ chunks.
    """

    extractive: bool = False
    model: str = ""
    """The answer model, a model choice (providers/catalog.py); "" for the site's default."""
    system_prompt: str = ""
    max_sources: int | None = None
    faq_thresholds: dict[int, float] = field(default_factory=dict)
    """KB id → the relevance at which a FAQ ranked first is the answer (KBs without one: off)."""
    max_tokens: int | None = None  # the cap on the answer's LLM tokens a caller asked for (None: LLMConfig's)


def answer_settings_for(kbs: list[KnowledgeBase]) -> AnswerSettings:
    """The turn's answer settings from its KBs, first KB first."""
    if not kbs:
        return AnswerSettings()
    first = kbs[0]
    caps = [kb.max_sources for kb in kbs if kb.max_sources is not None]
    return AnswerSettings(
        extractive=any(kb.answer_mode == AnswerMode.EXTRACTIVE for kb in kbs),
        model=first.answer_model or "", system_prompt=first.system_prompt or "",
        max_sources=max(caps) if len(caps) == len(kbs) else None,  # no cap on one KB: none on the turn
        faq_thresholds={kb.pk: float(kb.faq_direct_threshold) for kb in kbs if kb.faq_direct_threshold is not None},
    )


def answer_config(llm: LLMConfig | None | Any, answer: AnswerSettings) -> LLMConfig | None:
    """The LLM a turn uses: none when a KB is extractive-only, else the KB's model where it is offered, else the site's.

    ``llm`` is ``USE_SETTINGS`` (the model choices of providers/catalog.py: the KB's ``answer_model``
    through ``llm_config_for``, with that endpoint's URL and key; the site's default when the KB names
    none or a model no longer offered), None (extractive) or a config standing in for the site's default
    (an evaluation's): then a KB model of the environment's endpoint runs on that config, and a model of a
    console endpoint on its endpoint. Reads the database: call it from a thread.
    """
    if llm is None or answer.extractive:
        return None
    if llm is USE_SETTINGS:
        return (llm_config_for(answer.model) if answer.model else None) or llm_config_for("")
    choice = choice_get(answer.model) if answer.model else None
    if choice is None:
        return llm
    if choice.endpoint_id is None:
        return llm if choice.model == llm.model else replace(llm, model=choice.model)
    return llm_config_for(answer.model) or llm


@dataclass
class Turn:
    """One question in a conversation, checked and recorded, ready to be answered."""

    user: AbstractBaseUser
    conversation_id: int
    title: str
    user_message_id: int
    message_id: int
    """The assistant message the answer is written to."""
    kb_ids: list[int]
    kbs: list[KnowledgeBase]
    """The KBs, each resolved and checked for ``user`` once, by ``turn_start``; the search reads them as they are."""
    question: str
    not_found_text: str = ""
    """The first KB's not-found text: the answer whenever the turn ends not found, by retrieval or by the LLM
    (docs/chat.md, "Per-KB answer settings")."""
    history: list[tuple[str, str]] = field(default_factory=list)
    """Earlier (role, content) pairs, oldest first."""
    previous_queries: list[str] = field(default_factory=list)
    """Earlier standalone queries (each question as retrieval saw it), oldest first."""
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    scope: AccessScope | None = None
    """What ``user`` may read in ``kbs``, resolved by the same check (one statement, ``kbs_get_for_user``)."""
    search_overrides: dict[str, Any] = field(default_factory=dict)
    """Search settings that replace each KB's (an assistant's top_k and verdict lines: ``knowledge.services.search``)."""


def history_pairs(*, user, messages: list[Message]) -> list[tuple[str, str]]:
    """Earlier turns for rewriting and the prompt, as the user may read them now (chat/history.py): an answer
    given from a passage they can no longer read is left out, so a follow-up cannot bring it back."""
    readable = readable_view(user=user, messages=messages)
    return [(m.role, readable[m.pk].content) for m in messages if readable[m.pk].content]


def turn_start(*, user, conversation_id: Any, kb_ids: Any, question: Any) -> Turn:
    """Check the question, the conversation and every KB, then record the question and an empty answer.

    Raises ValidationFailed, or NotFound (``conversation_not_found`` for a
    conversation that is not the user's, ``kb_not_found`` for a KB they cannot
    read) before anything is written or searched. Without ``kb_ids`` the
    conversation's KBs are used.
    """
    question = query_clean(question)
    if conversation_id is not None and (not isinstance(conversation_id, int) or isinstance(conversation_id, bool)):
        raise fail(ChatError.INVALID_CONVERSATION)
    ids = kb_ids_clean(kb_ids, required=False)
    with transaction.atomic():
        conversation = None
        if conversation_id is not None:
            conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
            conversation = Conversation.objects.select_for_update().get(pk=conversation.pk)
            ids = ids or list(conversation.kb_ids or [])
        kb_ids_required(ids)
        kbs, scope = kbs_get_for_user(user=user, kb_ids=ids)
        history: list[Message] = []
        if conversation is None:
            conversation = Conversation.objects.create(user=user, title=question[:TITLE_CHARS], kb_ids=ids)
        else:
            history = selectors.conversation_history(conversation=conversation)
            conversation.kb_ids = ids
            conversation.save(update_fields=["kb_ids", "updated_at"])
        asked, answer = Message.objects.bulk_create([  # the question and its empty answer: one INSERT, ids in order
            Message(conversation=conversation, role=Role.USER, content=question),
            Message(conversation=conversation, role=Role.ASSISTANT, status=MessageStatus.INCOMPLETE)])
    return Turn(
        user=user, conversation_id=conversation.pk, title=conversation.title, user_message_id=asked.pk,
        message_id=answer.pk, kb_ids=ids, kbs=kbs, scope=scope, question=question,
        not_found_text=kb_not_found_text(kbs[0], question),  # the default in the asker's language (knowledge/not_found.py)
        history=history_pairs(user=user, messages=history),
        previous_queries=[m.rewritten_query or m.content for m in history if m.role == Role.USER],
        answer=answer_settings_for(kbs),
    )


def turn_settle(*, turn: Turn, rewritten_query: str, fields: dict[str, Any]) -> None:
    """Write the answer's final state and the question's standalone query, in one transaction."""
    with transaction.atomic():
        Message.objects.filter(pk=turn.message_id).update(kb_ids=turn.kb_ids, **fields)
        if rewritten_query:
            Message.objects.filter(pk=turn.user_message_id).update(rewritten_query=rewritten_query)
        Conversation.objects.filter(pk=turn.conversation_id).update(updated_at=timezone.now())


async def turn_prepare(*, user, conversation_id: Any, kb_ids: Any, question: Any) -> Turn:
    """``turn_start`` from async code."""
    return await in_thread(turn_start)(
        user=user, conversation_id=conversation_id, kb_ids=kb_ids, question=question,
    )


async def turn_abandon(turn: Turn) -> None:
    """Settle a turn cancelled before its answer started streaming."""
    await in_thread(turn_settle)(
        turn=turn, rewritten_query="", fields={"status": MessageStatus.CANCELLED, "error_code": "cancelled"},
    )


async def question_rewrite(turn: Turn, config: LLMConfig | None, usage: dict[str, Any] | None = None) -> tuple[Rewrite, str]:
    """The standalone query for ``turn`` and a note ("" or why the LLM rewrite was not used); ``usage`` receives
    the LLM rewrite's token counts."""
    if not turn.history:
        return Rewrite(turn.question, "none"), ""
    if config is not None:
        try:
            text = await llm_complete(config, rewrite_messages(question=turn.question, history=turn.history), usage=usage)
        except LLMError as exc:
            return rewrite_fallback(turn.question, turn.previous_queries), exc.code
        cleaned = rewrite_clean(text, question=turn.question)
        if cleaned:
            return Rewrite(cleaned, "llm"), ""
        return rewrite_fallback(turn.question, turn.previous_queries), "llm_rewrite_unusable"
    return rewrite_fallback(turn.question, turn.previous_queries), ""


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 1)


class TurnRecord:
    """A turn's timings, streamed answer and given sources, and the one write that settles its message."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.started = time.perf_counter()
        self.timings: dict[str, Any] = {}
        self.parts: list[str] = []
        self.standalone = ""
        self.given: list[dict[str, Any]] = []
        """The sources given to the answer, stored whatever ends it (a partial answer's too: chat/history.py redacts by them)."""
        self.settled = False

    def since(self, name: str, t: float) -> None:
        """Record the stage ``name`` as having run since ``t``."""
        self.timings[name] = _ms(t)

    def token(self, text: str) -> None:
        if not self.parts:
            self.timings["first_token_ms"] = _ms(self.started)
        self.parts.append(text)

    async def settle(self, **fields: Any) -> None:
        self.settled = True
        self.timings["total_ms"] = _ms(self.started)
        fields.setdefault("timings", self.timings)
        fields.setdefault("sources", self.given)
        await in_thread(turn_settle)(turn=self.turn, rewritten_query=self.standalone, fields=fields)

    async def fail(self, code: str, message: str, *, status: str = MessageStatus.ERROR) -> dict[str, Any]:
        """Settle the message as failed (a partial answer kept as incomplete) and return the ``error`` event."""
        partial = "".join(self.parts)
        if status == MessageStatus.INCOMPLETE and not partial:
            status = MessageStatus.ERROR
        await self.settle(content=partial, status=status, error_code=code)
        return {"type": "error", "code": code, "message": message, "conversation": self.turn.conversation_id,
                "message_id": self.turn.message_id, "status": status, "partial": partial}


def _start_event(turn: Turn) -> dict[str, Any]:
    return {"type": "start", "conversation": turn.conversation_id, "message": turn.message_id,
            "user_message": turn.user_message_id, "title": turn.title}


def _rewrite_event(turn: Turn, rewrite: Rewrite, note: str) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "rewrite", "query": rewrite.query, "original": turn.question, "method": rewrite.method}
    if note:
        event["note"] = note
    return event


def _sources_event(result: RetrievalResult, plan: AnswerPlan, given: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "sources", "verdict": plan.verdict, "hit": plan.hit, "relevance": number(result.relevance),
            "threshold": number(result.threshold), "answer_threshold": number(result.answer_threshold),
            "reader": number(result.reader), "verdict_by": result.verdict_by,
            "mode": result.mode, "reranker": result.reranker, "notes": list(result.notes), "sources": given}


def _finish_event(turn: Turn, answer: str, outcome: dict[str, Any], result: RetrievalResult,
                  config: LLMConfig | None, timings: dict[str, Any]) -> dict[str, Any]:
    mode, hit = outcome["mode"], outcome["hit"]
    return {"type": "finish", "conversation": turn.conversation_id, "message": turn.message_id,
            "answer": answer, "citations": outcome["citations"], "verdict": outcome["verdict"],
            "verdict_by": outcome["verdict_by"], "hit": hit, "not_found_by": outcome["not_found_by"],
            "answered_by": mode if hit else None,
            "confidence": outcome["confidence"], "relevance": number(result.relevance), "mode": mode,
            "model": config.model if mode == "llm" and config is not None else None,
            "status": MessageStatus.COMPLETE, "timings": timings}


async def _retrieve(turn: Turn, query: str, record: TurnRecord) -> RetrievalResult:
    """Search the turn's KBs (checked by ``turn_start``) for the standalone ``query``, timed."""
    t = time.perf_counter()
    # A list question's list may run on into the next chunk: adjacent results of one document are merged;
    # a result ending 「如下：」 brings the chunk it announces (a table or list chunked on its own).
    request = SearchRequest(query=query, merge_adjacent=is_list_question(query), continue_announced=True)
    result = await in_thread(search)(Search(request, user=turn.user, kbs=turn.kbs, scope=turn.scope,
                                            overrides=turn.search_overrides))
    record.since("retrieval_ms", t)
    record.timings["retrieval"] = {s.name: round(float(s.ms), 1) for s in result.timings}
    return result


async def turn_stream(turn: Turn, *, llm: LLMConfig | None = USE_SETTINGS) -> AsyncGenerator[dict[str, Any], None]:
    """Yield ``start``, ``rewrite``, ``sources``, ``token``… and ``finish`` — or ``error`` — for ``turn``.

    Whatever ends the stream (finish, an error, cancellation or the consumer
    closing the generator) the assistant message is settled (``TurnRecord``):
    complete, incomplete (partial answer kept), cancelled or error. The answer's
    mode and outcome are chat/answering.py's.
    """
    config = await in_thread(answer_config)(llm, turn.answer)
    record = TurnRecord(turn)
    try:
        yield _start_event(turn)
        t = time.perf_counter()
        rewrite_usage: dict[str, Any] = {}
        rewrite, note = await question_rewrite(turn, config, rewrite_usage)
        if rewrite_usage:
            record.timings["usage"] = rewrite_usage  # the rewrite costs tokens even when nothing is generated
        record.standalone = rewrite.query
        record.since("rewrite_ms", t)
        yield _rewrite_event(turn, rewrite, note)
        try:
            result = await _retrieve(turn, rewrite.query, record)
        except ApplicationError as exc:
            yield await record.fail(exc.code, exc.message)
            return
        plan = answer_plan(turn, result, rewrite.query, config, unresolved_followup=bool(
            turn.previous_queries and rewrite.method == "none" and needs_context(turn.question)))
        record.given = [s.payload() for s in plan.context.sources]
        yield _sources_event(result, plan, record.given)
        t = time.perf_counter()
        try:
            async with aclosing(plan.generator):
                async for text in plan.generator:
                    record.token(text)
                    yield {"type": "token", "text": text}
        except LLMError as exc:
            record.since("generation_ms", t)
            yield await record.fail(exc.code, exc.message, status=MessageStatus.INCOMPLETE)
            return
        record.since("generation_ms", t)
        answer = "".join(record.parts)
        if (usage := usage_add(record.timings.get("usage"), plan.llm_usage(answer))) is not None:
            record.timings["usage"] = usage  # rewrite + answer, counted by the assistants' usage (assistants/usage.py)
        outcome = answer_outcome(plan, answer)
        await record.settle(content=answer, status=MessageStatus.COMPLETE, error_code="", citations=outcome["citations"],
                            hit=outcome["hit"], not_found_by=outcome["not_found_by"], confidence=outcome["confidence"],
                            answer_mode=outcome["mode"], verdict=outcome["verdict"])
        yield _finish_event(turn, answer, outcome, result, config, record.timings)
    except (asyncio.CancelledError, GeneratorExit):
        if not record.settled:
            # Shielded: the answer is settled even though the task around it is being cancelled.
            await asyncio.shield(record.settle(content="".join(record.parts), status=MessageStatus.CANCELLED,
                                               error_code="cancelled"))
        raise
    except Exception:
        logger.exception("chat turn %s failed", turn.message_id)
        if not record.settled:
            yield await record.fail("internal_error", gettext("The answer could not be produced."))


# --- feedback (conversations are renamed and deleted in chat/conversations.py) -----------

def feedback_give(*, user, message_id: Any, rating: str, reason: str = "") -> Feedback:
    """Rate an answer in one of the user's conversations; a second rating replaces the first."""
    if rating not in Rating.values:
        raise fail(ChatError.INVALID_RATING)
    message = selectors.answer_get(user=user, message_id=message_id)
    feedback, _ = Feedback.objects.update_or_create(
        message=message, user=user, defaults={"rating": rating, "reason": (reason or "").strip()[:2000]},
    )
    return feedback
