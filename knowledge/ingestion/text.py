"""What a document's text becomes: the chunking chosen for it, its chunk drafts, and the text each chunk is
keyword-indexed by (tokenized with the KB's analyzer)."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from core.errors import fail
from knowledge.chunking import ChunkDraft, ChunkingConfig, chunk_document
from knowledge.errors import KnowledgeError
from knowledge.models import KnowledgeBase
from knowledge.parsers import ParsedDocument, ParseError
from knowledge.retrieval.analysis import AnalyzerConfig, get_analyzer
from knowledge.titles import text_title


def analyzer_config(kb: KnowledgeBase) -> AnalyzerConfig:
    """The KB's analysis settings: its jieba dictionary words and synonym groups."""
    return AnalyzerConfig(
        user_words=tuple(kb.user_words or ()),
        synonyms=tuple(tuple(g) for g in (kb.synonyms or ())),
    )


def analyzer_for(kb: KnowledgeBase):
    """The KB's analyzer (cached per configuration)."""
    return get_analyzer(analyzer_config(kb))


def keyword_text(*, title: str, section_path: Sequence[str], content: str, metadata: dict | None = None) -> str:
    """What BM25 indexes for a chunk: the document title and section headings, the caption of the table it is
    (or continues, ``metadata["caption"]``), then the body.

    Headings carry the words people ask with (a FAQ's question is its heading);
    indexing only the body would miss them. The embedding's enriched text also
    holds them, with labels ("主题：") that would only add noise here. ``title``
    is the text title (``titles.text_title``): empty for an id-like file name.
    Every chunk of a table split over several holds its header row in ``content``
    and its caption here (``knowledge.chunking``), so the chunk holding the row
    asked about can be found by the words of either.
    """
    parts = [title] if title else []
    parts += [h for h in section_path if h and h != title]
    caption = str((metadata or {}).get("caption") or "").strip()
    if caption:
        parts.append(caption)
    parts.append(content)
    return "\n".join(parts)


# The chunk sizes a person may choose (characters); the overlap may be at most half the chunk size.
CHUNK_SIZE_MIN, CHUNK_SIZE_MAX, CHUNK_OVERLAP_MAX = 50, 4000, 1000


@dataclass(frozen=True)
class Chunking:
    """A document's chosen chunk size and overlap in characters; None: the platform's ZHIKU_CHUNK_* setting."""

    size: int | None = None
    overlap: int | None = None

    @property
    def config(self) -> ChunkingConfig:
        """The chunker's configuration: the choices, the platform settings for what was not chosen."""
        size = self.size or settings.ZHIKU_CHUNK_MAX_CHARS
        overlap = settings.ZHIKU_CHUNK_OVERLAP_CHARS if self.overlap is None else self.overlap
        return ChunkingConfig(min_chars=min(settings.ZHIKU_CHUNK_MIN_CHARS, size), max_chars=size,
                              overlap_chars=min(overlap, size // 2))


def chunking_check(*, size: int | None, overlap: int | None) -> Chunking:
    """``Chunking`` of a person's choices, or 400 ``invalid_chunking`` saying what is out of range."""
    if size is not None and not CHUNK_SIZE_MIN <= size <= CHUNK_SIZE_MAX:
        raise fail(KnowledgeError.INVALID_CHUNKING, "size", min=CHUNK_SIZE_MIN, max=CHUNK_SIZE_MAX)
    if overlap is not None:
        limit = min(CHUNK_OVERLAP_MAX, (size or settings.ZHIKU_CHUNK_MAX_CHARS) // 2)
        if not 0 <= overlap <= limit:
            raise fail(KnowledgeError.INVALID_CHUNKING, "overlap", max=limit)
    return Chunking(size=size, overlap=overlap)


def chunk_parsed(parsed: ParsedDocument, source_name: str, chunking: Chunking) -> tuple[str, list[ChunkDraft]]:
    """The text title and the chunk drafts of a parsed file: what ingestion stores and a preview shows."""
    # What is embedded and indexed carries the parsed title, or the file stem only when it
    # means something (not IMG_2031 or atec-7-b); Document.title still shows the stem.
    title = text_title(parsed.title, source_name)[:500]
    drafts = chunk_document(dataclasses.replace(parsed, title=title), chunking.config)
    if not drafts:
        raise ParseError("empty_file", "No text could be extracted from the file.")
    return title, drafts


def faq_question(chunk_type: str, metadata: dict | None) -> str:
    """The question a FAQ chunk is also matched on by itself; "" for other chunks."""
    if chunk_type != "faq":
        return ""
    return " ".join(str((metadata or {}).get("question") or "").split())
