"""Retrieval as a tool for agents: results numbered with source, section and page."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext

from chat.prompts import MAX_CHUNK_CHARS, Source, cap_text
from core.jsonable import number
from knowledge.not_found import not_found_text
from knowledge.retrieval.types import RetrievalResult

TOOL_NAME = "zhiku_search"

TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Search zhiku knowledge bases (hybrid vector + BM25 retrieval, Chinese-first). Returns numbered passages "
            "with their document, section path and pages; cite them as [n]. When nothing relevant is found the "
            "result says so: do not guess."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "A standalone search query (resolve pronouns first)."},
                "kb_ids": {"type": "array", "items": {"type": "integer"}, "description": "Knowledge base ids to search."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many passages (default: the KB's top_k)."},
            },
            "required": ["query", "kb_ids"],
        },
    },
}


def format_for_tool_output(result: RetrievalResult, *, max_chunks: int | None = None,
                           chunk_chars: int = MAX_CHUNK_CHARS) -> dict[str, Any]:
    """The tool result: ``content`` (plain text for the model), ``results`` (the same passages as JSON), ``hit``.

    Not found: ``content`` says so with the KB's not-found text (its own as written, the shipped default in the
    turn's language: knowledge/not_found.py) and ``results`` is empty, so an agent is never handed weak passages
    to answer from.
    """
    if not result.hit:
        content = gettext("Nothing relevant found: %(text)s") % {"text": not_found_text(result.not_found_text)}
        return {"hit": False, "relevance": number(result.relevance), "content": content, "results": []}
    candidates = result.candidates[:max_chunks] if max_chunks else result.candidates
    sources = [Source(n=i, candidate=c, text=cap_text(c.content, chunk_chars)) for i, c in enumerate(candidates, 1)]
    return {"hit": True, "relevance": number(result.relevance), "content": tool_text(sources),
            "results": [_result(s) for s in sources]}


def tool_text(sources: Sequence[Source]) -> str:
    lines = [f"知识库检索结果（共 {len(sources)} 条，引用时请用 [编号]）："]
    for s in sources:
        relevance = s.candidate.relevance
        score = f"，相关度 {relevance:.2f}" if relevance is not None else ""
        lines.append(f"\n[{s.n}] 来源：{s.label()}{score}\n{s.text}")
    return "\n".join(lines)


def _result(s: Source) -> dict[str, Any]:
    c = s.candidate
    return {
        "n": s.n, "chunk_id": c.chunk_id, "kb_id": c.kb_id, "source": c.source_name, "title": c.title,
        "section": " > ".join(c.section_path), "section_path": list(c.section_path),
        "page": c.page_start, "page_end": c.page_end, "content": s.text, "relevance": number(c.relevance),
    }
