"""What a search records besides its results: stage timings, notes for the caller, and (debug) every number."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, Protocol

from .types import Candidate, StageTiming


class _Signals(Protocol):
    def as_dict(self) -> dict[str, float | None]: ...


class _KBConfig(Protocol):  # read-only members (properties), so a frozen config matches
    @property
    def kb_id(self) -> int: ...
    @property
    def fusion(self) -> str: ...


class TracedRun(Protocol):
    """What the trace reads of one KB's run (``recall.KBRun`` has it); a protocol, so this module needs no
    import of the recall stage."""

    # Properties: read-only, so a run with narrower types (dict for Mapping, a concrete config) matches.
    @property
    def kb(self) -> _KBConfig: ...
    @property
    def tokens(self) -> list[str]: ...
    @property
    def keyword_tokens(self) -> list[str]: ...
    @property
    def retried(self) -> bool: ...
    @property
    def weights(self) -> tuple[float, float]: ...
    @property
    def vector_hits(self) -> list[tuple[int, float]]: ...
    @property
    def keyword_hits(self) -> list[tuple[int, float]]: ...
    @property
    def signals(self) -> Mapping[int, _Signals]: ...
    @property
    def candidates(self) -> Mapping[int, Candidate]: ...
    @property
    def fused_all(self) -> list[int]: ...
    @property
    def fused_order(self) -> list[int]: ...


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
