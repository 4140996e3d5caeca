"""What chunking makes and is configured by: chunk drafts, the configuration, a chunk's enriched text."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ChunkDraft:
    """A chunk ready to embed and store: ``content`` is shown, ``enriched`` is embedded."""

    ordinal: int
    chunk_type: str  # "text" | "heading" | "table" | "faq"
    content: str
    enriched: str
    section_path: list[str]
    page_start: int | None
    page_end: int | None
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ChunkingConfig:
    """Size limits in characters (not tokens: Chinese has no spaces to count words by)."""

    min_chars: int = 80
    max_chars: int = 800
    overlap_chars: int = 0
    table_max_chars: int = 800
    """A longer table is split by rows, each part with the header. At most what an answer is given of a chunk
    (``chat.prompts.MAX_CHUNK_CHARS``, 800): with 2,000, the rows past the 800th character of a table chunk were
    never shown to the answer (11 of the 29 table chunks of devdata/manual-zh)."""
    section_depth_in_enriched: int = 3

    def __post_init__(self) -> None:
        if self.max_chars <= 0 or self.table_max_chars <= 0:
            raise ValueError("max_chars and table_max_chars must be positive")
        if not 0 <= self.min_chars <= self.max_chars:
            raise ValueError("min_chars must be between 0 and max_chars")
        if not 0 <= self.overlap_chars < self.max_chars:
            raise ValueError("overlap_chars must be at least 0 and below max_chars")
        if self.section_depth_in_enriched < 0:
            raise ValueError("section_depth_in_enriched must not be negative")


def enriched_text(*, title: str, section_path: list[str], content: str,
                  depth: int = ChunkingConfig.section_depth_in_enriched, caption: str = "") -> str:
    """The text embedded for a chunk: the document's title, its topic (the first ``depth`` headings), the caption
    of the table it continues, the body."""
    lines = [title] if title else []
    if section_path and depth:
        lines.append("主题：" + " > ".join(section_path[:depth]))
    if caption:
        lines.append(f"表格：{caption}")
    lines.append(content)
    return "\n".join(lines)
