"""A turn's answer once retrieval has spoken: which mode answers it, then its verdict, citations and confidence.

``answer_plan`` picks the mode (not found, FAQ, extractive, LLM) and the sources
given to it; ``answer_outcome`` reads the streamed answer back into the fields
``finish`` sends and the message stores (docs/chat.md, "How a question is answered").
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field, replace
from typing import Any

from django.utils.translation import gettext

from chat.extractive import extractive_answer, is_list_question
from chat.gfm import gfm_stream
from chat.llm import LLMConfig, MarkerGuard, judged_stream, llm_stream, text_stream, usage_of
from chat.models import NotFoundBy, Verdict
from chat.prompts import MAX_CHUNK_CHARS, Context, answer_candidates, answer_messages, citations_map, confidence_of, context_build
from knowledge.retrieval.types import Candidate, RetrievalResult


def uncertain_preface() -> str:
    """What an uncertain answer opens with, in the turn's language."""
    return gettext("No exact answer was found; the following may be relevant:")


def faq_direct(candidates: list[Candidate], thresholds: dict[int, float]) -> Candidate | None:
    """The FAQ chunk whose answer is the turn's answer, verbatim: ranked first, with its KB's threshold reached.

    The relevance is the judge's calibrated chance that the chunk answers the
    question; for a FAQ chunk its vector evidence already blends the stored
    question's cosine (``evidence.faq_cosine``).
    """
    if not candidates or not thresholds:
        return None
    top = candidates[0]
    threshold = thresholds.get(top.kb_id)
    if threshold is None or top.chunk_type != "faq" or top.relevance is None or float(top.relevance) < threshold:
        return None
    answer = str((top.metadata or {}).get("answer") or "").strip()
    return top if answer else None


@dataclass
class AnswerPlan:
    """How the answer is produced: its mode, its sources, the text stream, and retrieval's verdict."""

    mode: str
    """``not_found``, ``faq``, ``extractive`` or ``llm``."""
    context: Context
    generator: AsyncGenerator[str, None]
    verdict: str
    hit: bool
    guard: MarkerGuard
    messages: list[dict[str, str]] = field(default_factory=list)
    """The prompt sent to the LLM (mode ``llm``)."""
    usage: dict[str, int] = field(default_factory=dict)
    """The LLM endpoint's token counts, filled by the stream when it reports them (``llm.llm_stream``)."""

    def llm_usage(self, answer: str) -> dict[str, Any] | None:
        """The tokens the LLM spent on ``answer`` (estimated when the endpoint said nothing); None without an LLM."""
        return usage_of(self.usage, self.messages, answer) if self.messages else None


def answer_plan(turn, result: RetrievalResult, query: str, config: LLMConfig | None, *,
                unresolved_followup: bool = False) -> AnswerPlan:
    """The mode and sources for ``turn`` given retrieval's ``result`` for the standalone ``query``.

    ``unresolved_followup``: the question refers back but could not be rewritten into a standalone one (「那呢？」
    with nothing to carry): what was found for its own words is at most uncertain, never stated as the answer."""
    verdict = result.verdict
    if unresolved_followup and verdict == Verdict.ANSWERED:
        verdict = Verdict.UNCERTAIN
    hit = verdict != Verdict.NOT_FOUND
    listing = is_list_question(query)
    faq = faq_direct(result.candidates, turn.answer.faq_thresholds) if hit else None
    if faq is not None:
        verdict = Verdict.ANSWERED  # its KB's FAQ line is the owner's statement that this match answers
        context = context_build([faq])
    elif hit:
        context = context_build(answer_candidates(result.candidates, threshold=result.answer_threshold,
                                                  max_sources=turn.answer.max_sources),
                                chunk_chars=2 * MAX_CHUNK_CHARS if listing else MAX_CHUNK_CHARS)
    else:
        context = Context()
    guard = MarkerGuard()
    messages: list[dict[str, str]] = []
    usage: dict[str, int] = {}
    uncertain = verdict == Verdict.UNCERTAIN
    if not hit:
        mode, generator = "not_found", text_stream(turn.not_found_text)
    elif faq is not None:
        # The FAQ's answer verbatim (MaxKB's "directly return"): no LLM, no extraction.
        mode, generator = "faq", text_stream(str(faq.metadata["answer"]).strip())
    elif config is None:
        # Weak evidence is shown as what it is: the best found, which may not answer the question.
        text = extractive_answer(query, context.sources)
        mode, generator = "extractive", text_stream(f"{uncertain_preface()}\n\n{text}" if uncertain else text)
    else:
        # The LLM reads every question the gate lets through, told when the evidence is uncertain; its reply
        # decides: an answer, or the not-found marker.
        messages = answer_messages(question=turn.question, standalone=query, context=context,
                                   history=turn.history, custom_prompt=turn.answer.system_prompt,
                                   uncertain=uncertain)
        if turn.answer.max_tokens:  # a caller's cap (the OpenAI-compatible API's max_tokens and successors)
            config = replace(config, max_tokens=turn.answer.max_tokens)
        mode, generator = "llm", judged_stream(llm_stream(config, messages, usage), guard, turn.not_found_text)
    # Whoever wrote it (an LLM, a FAQ's owner), every answer's table rows reach every client as a GFM table.
    generator = gfm_stream(generator)
    return AnswerPlan(mode=mode, context=context, generator=generator, verdict=verdict, hit=hit, guard=guard,
                      messages=messages, usage=usage)


def answer_outcome(plan: AnswerPlan, answer: str) -> dict[str, Any]:
    """The streamed ``answer`` read back: hit, mode, verdict and who gave it, citations, confidence."""
    hit, mode, verdict = plan.hit, plan.mode, plan.verdict
    not_found_by = None if hit else NotFoundBy.RETRIEVAL
    verdict_by = "faq" if mode == "faq" else "retrieval"
    if plan.guard.not_found:
        hit, mode, not_found_by, verdict = False, "not_found", NotFoundBy.LLM, Verdict.NOT_FOUND
        verdict_by = "llm"
    elif mode == "llm" and verdict == Verdict.UNCERTAIN:
        verdict, verdict_by = Verdict.ANSWERED, "llm"  # the LLM read the sources and answered
    sources = plan.context.sources
    if mode == "faq":
        # The whole answer is the FAQ's: it is cited without a marker in the text.
        citations = citations_map("[1]", sources)
    else:
        citations = citations_map(answer, sources) if hit else []
    confidence = confidence_of(sources, citations) if hit else 0.0
    return {"hit": hit, "mode": mode, "verdict": verdict, "verdict_by": verdict_by, "not_found_by": not_found_by,
            "citations": citations, "confidence": confidence}
