"""Answer evaluation: labelled questions run as chat turns, scored on the answer text and its citations.

Retrieval metrics (``knowledge.services.evaluation``) say whether the right
passage was found; what a user reads is the answer. Each question here is one
first turn of a fresh conversation, through ``turn_start`` and ``turn_stream``
exactly as the websocket runs it (rewrite, retrieval, not-found judge, answer,
citations), and the conversation is deleted afterwards so an evaluation leaves
nothing in anyone's history.
"""
from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.utils import translation

from chat.answering import uncertain_preface
from chat.conversations import conversation_delete
from chat.llm import LLMConfig
from chat.prompts import without_citations
from chat.services import USE_SETTINGS, in_thread, turn_start, turn_stream
from core.errors import ApplicationError
from knowledge.models import Chunk
from knowledge.retrieval.analysis import get_analyzer
from knowledge.retrieval.judge import verdict_shares

# The answer must show within this many characters (citation markers aside) to count for ``answer_contains``.
HEAD_CHARS = 200
_SPACE_RE = re.compile(r"\s+")


@dataclass
class AnswerQuestion:
    """A question, the documents that answer it (empty: unanswerable) and the answer's text spans."""

    id: str
    text: str
    relevant: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)


@dataclass
class TurnOutcome:
    """What one chat turn produced, as the evaluation needs it."""

    answer: str = ""
    hit: bool = False
    verdict: str = ""
    cited_chunk_ids: list[int] = field(default_factory=list)
    first_token_ms: float | None = None
    reader_ms: float | None = None
    """The reader stage's time in the turn's retrieval (None: the reader did not run)."""
    query: str = ""
    """The standalone query the turn searched with (its rewrite)."""
    reader: float | None = None
    """The reader's best probability (None: off); ``relevance``: the judge's."""
    relevance: float | None = None
    mode: str = ""
    error: str = ""


def normalise(text: str) -> str:
    """Text for matching: NFKC (full-width → half-width), lower case, traditional → simplified, no whitespace.

    Both the answer and the answer spans go through it, so 「Ｐｙｔｈｏｎ　3.11」
    matches 「python 3.11」.
    """
    return _SPACE_RE.sub("", get_analyzer().normalize(text or ""))


def without_statement(answer: str) -> str:
    """The answer without the statement an uncertain answer opens with (in either language)."""
    for language in ("zh-hans", "en"):
        with translation.override(language):
            statement = uncertain_preface()
        if answer.startswith(statement):
            return answer[len(statement):].lstrip("\n")
    return answer


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """True when any answer span occurs in ``text`` (both normalised)."""
    haystack = normalise(text)
    return any(span and span in haystack for span in (normalise(a) for a in answers))


async def _turn(turn, llm) -> TurnOutcome:
    outcome = TurnOutcome()
    async for event in turn_stream(turn, llm=llm):
        if event["type"] == "rewrite":
            outcome.query = event["query"]
        elif event["type"] == "sources":
            outcome.reader, outcome.relevance = event.get("reader"), event.get("relevance")
        elif event["type"] == "finish":
            outcome.answer, outcome.hit, outcome.mode = event["answer"], bool(event["hit"]), event["mode"]
            outcome.verdict = event.get("verdict") or ""
            outcome.cited_chunk_ids = [c["chunk_id"] for c in event["citations"]]
            outcome.first_token_ms = event["timings"].get("first_token_ms")
            outcome.reader_ms = (event["timings"].get("retrieval") or {}).get("read")
        elif event["type"] == "error":
            outcome.error = event["code"]
    return outcome


async def turn_outcome(*, user, kb_ids: list[int], question: str, llm: LLMConfig | None | Any = USE_SETTINGS,
                       previous: Sequence[str] = ()) -> TurnOutcome:
    """Ask ``question`` in a new conversation, collect its events, then delete the conversation.

    ``previous``: questions asked first in the same conversation (a follow-up's), whose answers are not scored.
    A question the chat refuses (too long, say) is an outcome with its error code, not the end of the evaluation.
    """
    conversation_id = None
    try:
        for earlier in previous:
            turn = await in_thread(turn_start)(user=user, conversation_id=conversation_id, kb_ids=kb_ids, question=earlier)
            conversation_id = turn.conversation_id
            await _turn(turn, llm)
        turn = await in_thread(turn_start)(user=user, conversation_id=conversation_id, kb_ids=kb_ids, question=question)
    except ApplicationError as exc:
        if conversation_id is not None:
            await in_thread(conversation_delete)(user=user, conversation_id=conversation_id)
        return TurnOutcome(error=exc.code)
    try:
        outcome = await _turn(turn, llm)
    finally:
        await in_thread(conversation_delete)(user=user, conversation_id=turn.conversation_id)
    return outcome


@dataclass
class FollowUp:
    """A follow-up asked after ``previous`` in the same conversation, and the answer its reply must hold."""

    id: str
    previous: list[str]
    followup: str
    answer: str


def followup_evaluate(*, user, kb_ids: Sequence[int], pairs: Sequence[FollowUp],
                      llm: LLMConfig | None | Any = USE_SETTINGS, progress: Callable[[int], None] | None = None) -> dict:
    """Each follow-up asked after its previous question(s): the share of replies holding the answer within
    ``HEAD_CHARS``, and of replies that are wrong yet ``answered`` (stated with confidence)."""
    async def run_all() -> list[TurnOutcome]:
        outcomes = []
        for n, pair in enumerate(pairs, 1):
            outcomes.append(await turn_outcome(user=user, kb_ids=list(kb_ids), question=pair.followup, llm=llm,
                                               previous=pair.previous))
            if progress:
                progress(n)
        return outcomes

    outcomes = asyncio.run(run_all())
    holds = [o.hit and contains_answer(without_citations(o.answer)[:HEAD_CHARS], [p.answer]) for p, o in zip(pairs, outcomes, strict=True)]
    wrong_answered = [o.verdict == "answered" and not h for o, h in zip(outcomes, holds, strict=True)]
    return {
        "pairs": len(pairs), "errors": sum(1 for o in outcomes if o.error),
        "holds_answer": _share(holds),
        "wrong_answered": _share(wrong_answered),
        "answered_holds": _share([h for o, h in zip(outcomes, holds, strict=True) if o.verdict == "answered"]),
        "verdicts": verdict_shares([o.verdict for o in outcomes if o.verdict]),
        "reader_ms_p50": _p50([o.reader_ms for o in outcomes if o.reader_ms is not None]),
        "reader_ms_p95": _pct([o.reader_ms for o in outcomes if o.reader_ms is not None], 95),
        "per_pair": [{"id": p.id, "query": o.query, "verdict": o.verdict, "holds": h, "answer": o.answer[:HEAD_CHARS]}
                     for p, o, h in zip(pairs, outcomes, holds, strict=True)],
    }


def answer_evaluate(*, user, kb_ids: Sequence[int], questions: Sequence[AnswerQuestion],
                    llm: LLMConfig | None | Any = USE_SETTINGS, progress: Callable[[int], None] | None = None) -> dict:
    """Run every question as a chat turn and aggregate the answer metrics (``answer_metrics``).

    ``llm``: None for extractive answers, a config for that endpoint, or the
    site's settings (what users get). Call from synchronous code only.
    """
    async def run_all() -> list[TurnOutcome]:
        outcomes = []
        for n, q in enumerate(questions, 1):
            outcomes.append(await turn_outcome(user=user, kb_ids=list(kb_ids), question=q.text, llm=llm))
            if progress:
                progress(n)
        return outcomes

    outcomes = asyncio.run(run_all())
    cited = {c.pk: c.content for c in Chunk.objects.filter(pk__in={i for o in outcomes for i in o.cited_chunk_ids})}
    return answer_metrics(questions, outcomes, cited)


def answer_metrics(questions: Sequence[AnswerQuestion], outcomes: Sequence[TurnOutcome], chunk_text: dict[int, str]) -> dict:
    """The figures of docs/chat.md "Evaluating answers", from each question's outcome and the cited chunks' text.

    Answer-text figures count answerable questions with answer spans; an answer is *given* when answered or uncertain.
    ``answer_contains`` / ``_answered``: the given / answered answers holding a span within ``HEAD_CHARS``, over all those
    questions; ``answer_contains_given`` / ``answer_precision_answered``: the same among the given / answered ones.
    ``citation_precision`` counts those questions' citations; ``answer_chars_p50`` the hits' answers without an uncertain
    answer's opening statement; ``verdicts``: each outcome's share among answerable and unanswerable questions.
    """
    spans = [(q, o) for q, o in zip(questions, outcomes, strict=True) if q.relevant and q.answers]
    answered = [(q, o) for q, o in spans if o.hit]  # answers given: answered or uncertain
    citations = [contains_answer(chunk_text.get(cid, ""), q.answers) for q, o in answered for cid in o.cited_chunk_ids]
    answerable = [o for q, o in zip(questions, outcomes, strict=True) if q.relevant]
    unanswerable = [o for q, o in zip(questions, outcomes, strict=True) if not q.relevant]
    shown = [without_statement(without_citations(o.answer)) for o in outcomes if o.hit]
    return {
        "questions": len(questions), "answerable": len(answerable), "unanswerable": len(unanswerable),
        "with_answers": len(spans), "answered": len(answered), "citations": len(citations),
        "errors": sum(1 for o in outcomes if o.error),
        "answer_contains": _share([o.hit and contains_answer(without_citations(o.answer)[:HEAD_CHARS], q.answers) for q, o in spans]),
        "answer_contains_full": _share([o.hit and contains_answer(without_citations(o.answer), q.answers) for q, o in spans]),
        "answer_contains_answered": _share([o.verdict == "answered" and contains_answer(without_citations(o.answer)[:HEAD_CHARS], q.answers)
                                            for q, o in spans]),
        "answer_contains_given": _share([contains_answer(without_citations(o.answer)[:HEAD_CHARS], q.answers) for q, o in answered]),
        "answer_precision_answered": _share([contains_answer(without_citations(o.answer)[:HEAD_CHARS], q.answers)
                                             for q, o in spans if o.verdict == "answered"]),
        "citation_precision": _share(citations),
        "verdicts": {"answerable": verdict_shares([o.verdict for o in answerable if o.verdict]),
                     "unanswerable": verdict_shares([o.verdict for o in unanswerable if o.verdict])},
        "not_found_rate_answerable": _share([not o.hit for o in answerable]),
        "not_found_rate_unanswerable": _share([not o.hit for o in unanswerable]),
        "answer_chars_p50": _p50([len(a) for a in shown]),
        "first_token_ms_p50": _p50([o.first_token_ms for o in outcomes if o.first_token_ms is not None]),
        "reader_ms_p50": _p50([o.reader_ms for o in outcomes if o.reader_ms is not None]),
        "reader_ms_p95": _pct([o.reader_ms for o in outcomes if o.reader_ms is not None], 95),
        "per_query": [{"id": q.id, "hit": o.hit, "verdict": o.verdict, "mode": o.mode, "error": o.error,
                       "contains": bool(q.answers) and contains_answer(without_citations(o.answer)[:HEAD_CHARS], q.answers),
                       "answer": o.answer[:HEAD_CHARS], "reader_ms": o.reader_ms, "reader": o.reader,
                       "relevance": o.relevance} for q, o in zip(questions, outcomes, strict=True)],
    }


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(map(bool, flags)) / len(flags), 4) if flags else None


def _p50(values: Sequence[float]) -> float | None:
    return _pct(values, 50)


def _pct(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None
