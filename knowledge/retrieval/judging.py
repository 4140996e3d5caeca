"""The judge stage: each pooled candidate's relevance, the judge's reordering, and the verdict over the KBs.

``judge_candidates`` (per KB): every candidate that can reach the results gets its own ``relevance`` from
its own evidence (``evidence.passage_evidence``, its cosine, the cosine against the query's background;
``judge`` explains the number and the KB's calibration). In hybrid search the judged head is then reordered by
``judge_score`` (the calibrated relevance blended with what the fused ranking said, ``prior``), which is kept
on each candidate. The KB's relevance is the best within the first ``judge_depth`` (3) of its list.

``decide``: the verdict (answered / uncertain / not found) is the best over all KBs, each KB's relevance
against its own two lines; a FAQ entry matching the question by meaning is never not found, talk always is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import evidence
from .judge import ANSWERED, NOT_FOUND, UNCERTAIN, VERDICTS, Judge, JudgeSignals
from .protocols import CROSS_ENCODER_PREFIX, ChunkRecord, Embedder
from .recall import UNSET, KBRun
from .trace import Trace
from .tuning import JUDGE_MARGIN, Tuning


class Judging:
    """The judge with the embedders its background and talk checks need."""

    def __init__(self, *, judge: Judge, embedder_for: Callable[[str], Embedder], tuning: Tuning) -> None:
        self.judge = judge
        self.embedder_for = embedder_for
        self.tuning = tuning

    def judge_candidates(self, run: KBRun, records: Mapping[int, ChunkRecord], top_k: int, trace: Trace) -> None:
        """The relevance of every candidate that can reach the results, and the KB's: the best within its head.

        Judged: the first ``top_k`` + ``JUDGE_MARGIN`` of the KB's list (room for the cut's
        de-duplication) and BM25's top 3 (the rescue); the rest of the pool cannot be shown.
        """
        t = self.tuning
        order = run.final_order
        if not order:
            return
        wanted = list(dict.fromkeys([*order[: top_k + JUDGE_MARGIN],
                                     *(c for c, _ in run.keyword_hits[: t.rescue_top] if c in run.candidates)]))
        for cid in wanted:
            self.judge_one(run, cid, records)
        if t.judge_rerank > 0 and run.vector_ran and run.keyword_ran:
            # Hybrid only (where it was measured): a single-path mode shows that path's own ranking.
            head = [c for c in order if run.candidates[c].relevance is not None]
            rest = [c for c in order if run.candidates[c].relevance is None]
            prior = self.prior(run, order)
            a = t.judge_rerank * run.lexical_weight
            for c in head:
                run.candidates[c].judge_score = a * evidence.logit(run.candidates[c].relevance or 0.0) + (1 - a) * prior[c]
            run.final_order = order = sorted(head, key=lambda c: -(run.candidates[c].judge_score or 0.0)) + rest
        run.relevance = max(run.candidates[c].relevance or 0.0 for c in order[: t.judge_depth])
        if self.judge.calibrated(run.kb.embedding_model):
            # A FAQ entry whose question the query matches by meaning is strong evidence of its own, whatever the
            # words (「下雨天能骑车吗」 for 「雨天可以骑行吗」): such a question is never turned away (``verdict``).
            run.faq_match = max((run.signals[c].question_cosine or 0.0 for c in order[: t.judge_depth]
                                 if c in run.signals), default=0.0) >= t.faq_match_cosine
        run.chitchat = self.chitchat(run)
        if self.judge.usable(run.signals[order[0]], run.kb.embedding_model) != run.signals[order[0]]:
            trace.note(f"raw cosines of {run.kb.embedding_model} are not calibrated; judged on keyword signals "
                       f"and cosines against the query's background")

    def prior(self, run: KBRun, order: list[int]) -> dict[int, float]:
        """What the judge's reordering keeps of the fused ranking: the score gap to the first, in log-rank units.

        ``judge_prior`` (the span): the first candidate 0, one whose final score is the pool's lowest
        −span, linearly between, so a near-tie stays a near-tie for the judge to settle. ``None``: the
        rank alone (−ln rank), which turned a gap of 0.01 into a full rank step (``defaults.JUDGE_PRIOR_SPAN``).
        """
        if self.tuning.judge_prior is None:
            return {c: -math.log(i + 1) for i, c in enumerate(order)}
        scores = {c: run.candidates[c].final_score or 0.0 for c in order}
        return {c: self.tuning.judge_prior * (s - 1.0) for c, s in scores.items()}

    def judge_one(self, run: KBRun, cid: int, records: Mapping[int, ChunkRecord]) -> None:
        """One candidate's signals (kept for debug) and its relevance, with the KB's calibration."""
        if run.background is UNSET:
            run.background = self.background(run)
        cand = run.candidates[cid]
        lex = run.lexical_evidence(cid, records)
        cosine = cand.vector_similarity if run.vector_ran else None
        question = records[cid].question_vector
        signals = JudgeSignals(
            coverage=lex.coverage, token_share=lex.token_share, missing=lex.missing,
            cosine=cosine, cosine_z=run.background.z(cosine) if run.background is not None else None,
            rerank=cand.rerank_score if run.reranker.startswith(CROSS_ENCODER_PREFIX) else None,
            question_cosine=(evidence.cosine(np.asarray(question, dtype=np.float32), run.query_vector)
                             if question is not None and run.query_vector is not None
                             and np.asarray(question).shape == run.query_vector.shape else None),
        )
        run.signals[cid] = signals
        cand.relevance = self.judge.probability(signals, run.kb.embedding_model, calibration=run.kb.calibration)

    def background(self, run: KBRun) -> evidence.QueryBackground | None:
        """The query's cosines to the background bank, for ``cosine_z`` (None without a passage encoder)."""
        if run.query_vector is None or not evidence.enabled():
            return None
        if not self.tuning.background_for_all and self.judge.calibrated(run.kb.embedding_model):
            return None
        embedder = self.embedder_for(run.kb.embedding_model)
        bank = evidence.BACKGROUND.vectors(run.kb.embedding_model, getattr(embedder, "embed_passages", None))
        if bank is None or bank.shape[1] != run.query_vector.shape[0]:
            return None
        return evidence.query_background(run.query_vector, bank)

    def chitchat(self, run: KBRun) -> float | None:
        """The query's closest conversational utterance (cosine), for the embedding the judge is fitted on."""
        if (run.query_vector is None or not self.judge.calibrated(run.kb.embedding_model)
                or self.tuning.chitchat_cosine > 1):
            return None
        embedder = self.embedder_for(run.kb.embedding_model)
        return evidence.CHITCHAT.closest(run.kb.embedding_model, embedder.embed_query, run.query_vector)

    def verdict(self, run: KBRun) -> str:
        """One KB's verdict: its two lines on the relevance, after the two kinds of evidence that outrank them.

        A FAQ entry matching the question by meaning keeps it from being turned away (``uncertain`` at worst);
        otherwise a query that is talk (「你好」「谢谢」「测试」, ``chitchat``) is ``not_found`` whatever words it shares.
        """
        verdict = self.judge.verdict(run.relevance, run.kb.threshold, run.kb.answer_threshold)
        if run.faq_match:
            return UNCERTAIN if verdict == NOT_FOUND else verdict
        if run.chitchat is not None and run.chitchat >= self.tuning.chitchat_cosine:
            return NOT_FOUND
        return verdict

    def decide(self, runs: list[KBRun], any_selected: bool, trace: Trace) -> tuple[str, KBRun | None]:
        """The verdict over all KBs and the KB that decides it, each judged against its own two lines.

        The deciding KB is the one furthest past the line that gave the verdict (furthest below the gate
        when none passes).
        """
        judged = [run for run in runs if run.relevance is not None] if any_selected else []
        verdicts = {run.kb.kb_id: self.verdict(run) for run in judged}
        verdict = next((v for v in VERDICTS if v in verdicts.values()), NOT_FOUND)
        deciding = max((run for run in judged if verdicts[run.kb.kb_id] == verdict),
                       key=lambda r: ((r.relevance or 0.0) - (r.kb.answer_threshold if verdict == ANSWERED
                                                              else r.kb.threshold), -r.order), default=None)
        trace.record("judge", lambda: self._debug(deciding, judged, verdict))
        return verdict, deciding

    def _debug(self, deciding: KBRun | None, judged: list[KBRun], verdict: str) -> dict[str, Any]:
        if deciding is None:
            return {"signals": None, "model": None, "relevance": None, "threshold": None, "answer_threshold": None,
                    "verdict": NOT_FOUND, "hit": False, "kb_id": None}
        best = max(deciding.final_order[: self.tuning.judge_depth],
                   key=lambda c: deciding.candidates[c].relevance or 0.0)
        signals = deciding.signals[best]
        model = self.judge.model_for(signals, deciding.kb.embedding_model)
        return {"signals": signals.as_dict(), "model": model.name if model else None, "chunk_id": best,
                "relevance": deciding.relevance, "threshold": deciding.kb.threshold,
                "answer_threshold": deciding.kb.answer_threshold, "verdict": verdict, "hit": verdict != NOT_FOUND,
                "faq_match": deciding.faq_match, "chitchat": deciding.chitchat,
                "kb_id": deciding.kb.kb_id, "calibration": list(deciding.kb.calibration),
                "by_kb": {run.kb.kb_id: run.relevance for run in judged}}
