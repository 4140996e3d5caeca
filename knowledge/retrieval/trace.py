"""What a search records besides its results: stage timings, notes for the caller, and (debug) every number."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from .types import Candidate, StageTiming


class _Signals(Protocol):
    def as_dict(self) -> dict[str, float | None]: ...


class _KBConfig(Protocol):
    kb_id: int
    fusion: str


class TracedRun(Protocol):
    """What the trace reads of one KB's run (``recall.KBRun`` has it); a protocol, so this module needs no
    import of the recall stage."""

    kb: _KBConfig
    tokens: list[str]
    keyword_tokens: list[str]
    retried: bool
    weights: tuple[float, float]
    vector_hits: list[tuple[int, float]]
    keyword_hits: list[tuple[int, float]]
    signals: Mapping[int, _Signals]
    candidates: Mapping[int, Candidate]
    fused_all: list[int]
    fused_order: list[int]

# The scores a debug snapshot shows of a candidate, one per stage (``types.Candidate``).
SNAPSHOT_FIELDS = ("chunk_id", "kb_id", "document_id", "vector_similarity", "vector_rank", "bm25_score",
                   "bm25_rank", "fused_score", "fused_rank", "rerank_score", "final_score", "relevance")


def snapshot(c: Candidate) -> dict[str, Any]:
    """A candidate's ids and stage scores, for the debug record."""
    return {k: v for k, v in asdict(c).items() if k in SNAPSHOT_FIELDS}


def signals_of(runs: Sequence[TracedRun], cand: Candidate) -> dict[str, float | None] | None:
    """The judge's signals for ``cand``, from the KB run that judged it (None when none did)."""
    for run in runs:
        if cand.chunk_id in run.signals:
            return run.signals[cand.chunk_id].as_dict()
    return None


class Trace:
    """Per-stage timings, notes, and with ``debug`` every path's candidates and each stage's scores."""

    def __init__(self, query: str, mode: str, debug: bool) -> None:
        self.started = time.perf_counter()
        self.mode = mode
        self.timings: list[StageTiming] = []
        self.notes: list[str] = []
        self.debug: dict[str, Any] | None = {"query": query, "mode": mode, "kbs": {}} if debug else None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add_time(name, (time.perf_counter() - start) * 1000.0)

    def add_time(self, name: str, ms: float) -> None:
        for existing in self.timings:
            if existing.name == name:  # a stage that ran in two parts (load: pool, then neighbours)
                existing.ms += ms
                return
        self.timings.append(StageTiming(name, ms))

    def finish(self) -> None:
        """The whole call's time, as the stage ``total``."""
        self.add_time("total", (time.perf_counter() - self.started) * 1000.0)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def record(self, key: str, value: Callable[[], Any]) -> None:
        """Keep ``value()`` under ``key`` when debugging (computed only then)."""
        if self.debug is not None:
            self.debug[key] = value()

    def paths(self, runs: Sequence[TracedRun]) -> None:
        """Each KB's tokens, weights, both paths' hits and the fused list (debug only)."""
        if self.debug is None:
            return
        for run in runs:
            self.debug["kbs"][run.kb.kb_id] = {
                "tokens": run.tokens,
                "keyword_tokens": run.keyword_tokens,
                "low_score_retry": run.retried,
                "weights": {"vector": run.weights[0], "keyword": run.weights[1]},
                "fusion": run.kb.fusion,
                "vector": [{"chunk_id": c, "similarity": s, "rank": i + 1} for i, (c, s) in enumerate(run.vector_hits)],
                "keyword": [{"chunk_id": c, "bm25": s, "rank": i + 1} for i, (c, s) in enumerate(run.keyword_hits)],
                "fused": [snapshot(run.candidates[c]) for c in run.fused_all],
                "pool": list(run.fused_order),
            }
