"""The learn stage: a KB's confirmed labels for questions like this one, their passages brought in and ranked first.

Runs only for the KBs that opted in (``KBSearchConfig.learn``) and only where the query was embedded. Three steps,
timed together as ``learn``:

``match``  after ``embed``: each such KB's confirmed labels whose question vector has cosine ≥ ``learn_cosine``
           with the query's (``LabelStore.nearest``: filtered by KB in SQL, each label's chunks found in that KB
           only, so a label never reaches another KB).
``pool``   after ``load``: a labelled passage the paths did not find is fetched through the same scoped
           ``ChunkStore`` as every candidate (``fetch`` re-checks the caller's scope, the chunk being enabled and its
           document ready): what the caller may not read is never added (nor anything under a search's filters).
``apply``  after ``judge``: each KB's list reordered, its labelled passages first (nearest label first), the
           passages confirmed wrong for the question last; a labelled passage is judged like any other and its
           relevance lifted to at least the KB's not-found gate (an owner said it answers the question: it is shown,
           ``uncertain`` at worst, never hidden behind the not-found text).

The debug record ``learned`` says which label moved which chunk. Figures: docs/relevance.md, *Learning from feedback*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import evidence
from .protocols import AccessScope, ChunkRecord, ChunkStore, LabelMatch, LabelStore, SearchFilters
from .recall import KBRun
from .trace import Trace
from .tuning import Tuning
from .types import Candidate


def match(runs: list[KBRun], labels: LabelStore | None, tuning: Tuning) -> None:
    """Each learning KB's nearest confirmed labels (``run.labels``), none where the query has no vector."""
    if labels is None:
        return
    for run in runs:
        if run.kb.learn and run.query_vector is not None:
            run.labels = labels.nearest(kb_id=run.kb.kb_id, embedding_model=run.kb.embedding_model,
                                        query_vector=run.query_vector, min_cosine=tuning.learn_cosine,
                                        limit=tuning.learn_labels)


def pool(runs: list[KBRun], records: dict[int, ChunkRecord], *, chunks: ChunkStore, scope: AccessScope,
         filters: SearchFilters) -> None:
    """Fetch the labelled passages the paths did not find, as the caller may read them, into ``records``.

    Not under filters: a search narrowed (to documents, sources, types, metadata) only reorders what its paths found.
    """
    if not filters.empty:
        return
    missing = list(dict.fromkeys(cid for run in runs for label in run.labels for cid in label.chunk_ids
                                 if cid not in records))
    if not missing:
        return
    fetched = chunks.fetch(missing, scope=scope, with_vectors=True)
    for run in runs:
        for label in run.labels:
            for cid in label.chunk_ids:
                record = fetched.get(cid)
                if record is not None and record.kb_id == run.kb.kb_id:
                    records[cid] = record


def apply(runs: list[KBRun], records: Mapping[int, ChunkRecord], *, judge_one: Callable[[KBRun, int, Mapping[int, ChunkRecord]], None],
          judge_depth: int, trace: Trace) -> None:
    """Each learning KB's list: its labelled passages first, its wrong passages last (see the module docstring)."""
    moves: list[dict[str, Any]] = []
    for run in runs:
        if not run.labels:
            continue
        boosted: dict[int, LabelMatch] = {}
        demoted: dict[int, LabelMatch] = {}
        for label in run.labels:  # nearest first: a chunk keeps its nearest label
            for cid in label.chunk_ids:
                if cid in records and records[cid].kb_id == run.kb.kb_id:
                    boosted.setdefault(cid, label)
            for cid in label.negative_chunk_ids:
                demoted.setdefault(cid, label)
        demoted = {c: label for c, label in demoted.items() if c not in boosted}
        for cid, label in boosted.items():
            added = cid not in run.candidates
            if added:
                run.candidates[cid] = _candidate(run, records[cid])
            if run.candidates[cid].relevance is None:
                judge_one(run, cid, records)
            cand = run.candidates[cid]
            cand.relevance = max(cand.relevance or 0.0, run.kb.threshold)
            moves.append(_move(run, cid, label, "added" if added else "boosted"))
        for cid, label in demoted.items():
            if cid in run.candidates:
                moves.append(_move(run, cid, label, "demoted"))
        if not boosted and not any(c in run.candidates for c in demoted):
            continue
        rest = [c for c in run.final_order if c not in boosted and c not in demoted]
        run.final_order = [*boosted, *rest, *(c for c in run.final_order if c in demoted)]
        run.relevance = max(run.candidates[c].relevance or 0.0 for c in run.final_order[:judge_depth])
    trace.record("learned", lambda: moves)


def _candidate(run: KBRun, record: ChunkRecord) -> Candidate:
    """A labelled passage the paths did not find: its cosine with the query, no path's rank."""
    cosine = (evidence.record_cosine(run.query_vector, record.vector, record.question_vector)
              if run.query_vector is not None and record.vector is not None else None)
    return Candidate(chunk_id=record.chunk_id, kb_id=record.kb_id, document_id=record.document_id,
                     vector_similarity=None if cosine is None else float(np.float32(cosine)))


def _move(run: KBRun, cid: int, label: LabelMatch, action: str) -> dict[str, Any]:
    return {"kb_id": run.kb.kb_id, "chunk_id": cid, "action": action, "label_id": label.label_id,
            "question": label.question, "cosine": round(label.cosine, 4)}
