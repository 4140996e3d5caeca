"""Context assembly for the selected results: payload, neighbour expansion, adjacent merging, announced continuation.

What chat asks for (``SearchRequest.expand_neighbours`` / ``merge_adjacent`` / ``continue_announced``); a plain
search only fills each result's payload (``fill_payload``).
"""

from __future__ import annotations

from dataclasses import replace

from .protocols import AccessScope, ChunkRecord, ChunkStore
from .text import ANNOUNCING
from .types import Candidate


def expand(selected: list[Candidate], records: dict[int, ChunkRecord], *, chunks: ChunkStore, scope: AccessScope,
           neighbours: int, merge_adjacent: bool, continue_announced: bool = False) -> list[Candidate]:
    """The results with ``neighbours`` chunks around each, adjacent ones merged, announced chunks continued."""
    for cand in selected:
        record = records.get(cand.chunk_id)
        if record is not None:
            fill_payload(cand, record)
    if neighbours > 0:
        for cand in selected:
            record = records[cand.chunk_id]
            around = chunks.neighbours(record, before=neighbours, after=neighbours, scope=scope)
            if not around:
                continue
            parts = sorted([record, *around], key=lambda r: r.ordinal)
            _merge_into(cand, parts, key="expanded_chunk_ids")
    if merge_adjacent:
        selected = _merge_adjacent(selected)
    if continue_announced:
        for cand in selected:
            if cand.content.rstrip().endswith(ANNOUNCING) and cand.chunk_id in records:
                _continue(cand, records[cand.chunk_id], chunks=chunks, scope=scope)
    return selected


def _merge_adjacent(selected: list[Candidate]) -> list[Candidate]:
    """Results that are adjacent chunks of one document merged into the higher-ranked one."""
    out: list[Candidate] = []
    for cand in selected:
        host = next((o for o in out if o.document_id == cand.document_id and o.ordinal is not None
                     and cand.ordinal is not None and _adjacent(o, cand)), None)
        if host is None:
            out.append(cand)
            continue
        first, last = (host, cand) if (host.ordinal or 0) < (cand.ordinal or 0) else (cand, host)
        host.content = f"{first.content}\n{last.content}" if first is host else f"{cand.content}\n{host.content}"
        host.metadata = {**host.metadata, "merged_chunk_ids": [*host.metadata.get("merged_chunk_ids", [host.chunk_id]), cand.chunk_id]}
        host.metadata["span"] = [min(host.metadata.get("span", [host.ordinal])[0], cand.ordinal),
                                 max(host.metadata.get("span", [host.ordinal, host.ordinal])[-1], cand.ordinal)]
        _widen_pages(host, cand)
    return out


def _continue(cand: Candidate, record: ChunkRecord, *, chunks: ChunkStore, scope: AccessScope) -> None:
    """Append the chunk after the last one ``cand`` holds (the table or list its last line announces)."""
    last = cand.metadata.get("span", [record.ordinal, record.ordinal])[-1]
    if last is None:
        return
    after = chunks.neighbours(replace(record, ordinal=last), before=0, after=1, scope=scope)
    after = [r for r in after if r.ordinal == last + 1]
    if not after:
        return
    nxt = after[0]
    cand.content = f"{cand.content}\n{nxt.content}"
    cand.metadata = {**cand.metadata, "continued_chunk_ids": [nxt.chunk_id],
                     "span": [cand.metadata.get("span", [record.ordinal])[0], nxt.ordinal]}
    _widen_pages(cand, nxt)


def _widen_pages(host: Candidate, part: Candidate | ChunkRecord) -> None:
    """``host``'s pages widened to hold ``part``'s (a chunk merged into it)."""
    host.page_start = min((p for p in (host.page_start, part.page_start) if p is not None), default=None)
    host.page_end = max((p for p in (host.page_end, part.page_end) if p is not None), default=None)


def _adjacent(host: Candidate, cand: Candidate) -> bool:
    span = host.metadata.get("span", [host.ordinal, host.ordinal])
    return cand.ordinal is not None and (cand.ordinal == span[0] - 1 or cand.ordinal == span[-1] + 1)


def _merge_into(cand: Candidate, parts: list[ChunkRecord], *, key: str) -> None:
    cand.content = "\n".join(p.content for p in parts)
    cand.metadata = {**cand.metadata, key: [p.chunk_id for p in parts if p.chunk_id != cand.chunk_id],
                     "span": [parts[0].ordinal, parts[-1].ordinal]}
    pages = [p for r in parts for p in (r.page_start, r.page_end) if p is not None]
    if pages:
        cand.page_start, cand.page_end = min(pages), max(pages)


def fill_payload(cand: Candidate, record: ChunkRecord) -> None:
    """The chunk's text, title, section, pages and metadata copied onto its candidate."""
    cand.document_id = record.document_id
    cand.content = record.content
    cand.title = record.title
    cand.section_path = list(record.section_path)
    cand.page_start, cand.page_end = record.page_start, record.page_end
    cand.chunk_type = record.chunk_type
    cand.source_name = record.source_name
    cand.source_url = record.source_url
    cand.ordinal = record.ordinal
    cand.metadata = {**record.metadata, **cand.metadata}
