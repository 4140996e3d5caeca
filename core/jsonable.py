"""Values as JSON: one coercion of numpy and dataclass values, one shape of a retrieval candidate.

``payload`` (knowledge/services/search.py) and a chat source's payload
(chat/prompts.py) both build on ``candidate_json``, so a result and a source name
their document, place and scores alike.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from typing import Any, Protocol

import numpy as np


def number(value: Any) -> float | None:
    """A score as a plain float for JSON (numpy scalars are not serialisable), or None."""
    return None if value is None else float(value)


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays as numbers and lists, dataclasses as objects, sets
    as lists, dates as ISO text; anything else JSON has no word for, as its text (a parser's metadata may hold
    any object, knowledge/ingestion/run.py stores it)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


SCORE_FIELDS = ("relevance", "vector_similarity", "vector_rank", "bm25_score", "bm25_rank", "fused_score",
                "fused_rank", "rerank_score", "final_score", "reader_score")


class CandidateLike(Protocol):
    """What ``candidate_json`` reads of a retrieval candidate (knowledge.retrieval.types.Candidate), besides its scores."""

    @property
    def chunk_id(self) -> int: ...
    @property
    def kb_id(self) -> int: ...
    @property
    def document_id(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def source_name(self) -> str: ...
    @property
    def source_url(self) -> str: ...
    @property
    def section_path(self) -> Sequence[str]: ...
    @property
    def page_start(self) -> int | None: ...
    @property
    def page_end(self) -> int | None: ...
    @property
    def chunk_type(self) -> str: ...
    @property
    def content(self) -> str: ...


def candidate_json(c: CandidateLike, *, content: str | None = None) -> dict[str, Any]:
    """A candidate's chunk, document, place and every score by name (``content``: the text as given, else the chunk's)."""
    return {
        "chunk_id": c.chunk_id, "kb_id": c.kb_id,
        "document": {"id": c.document_id, "title": c.title, "source_name": c.source_name,
                     "source_url": c.source_url},
        "section_path": list(c.section_path), "pages": {"start": c.page_start, "end": c.page_end},
        "chunk_type": c.chunk_type, "content": c.content if content is None else content,
        "scores": {name: jsonable(getattr(c, name)) for name in SCORE_FIELDS},
    }
