"""A parsed document walked block by block into chunk drafts: sections, headings, tables, FAQ entries.

No chunk is only a heading: a heading whose section has no body (closed by the next heading of its level or
above, or by the document's end) travels into the next chunk, as its first line (at the end, into the last
chunk); the document's title opens no chunk of its own. An article's label (「第三条」, ``is_article``) opens
no section: it starts a new chunk of the section it stands in, as that chunk's first words.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from knowledge.chunking.drafts import ChunkDraft, ChunkingConfig, enriched_text
from knowledge.chunking.packing import (
    TABLE_SEPARATOR,
    caption_of,
    join_pieces,
    mark_tables,
    overlap_before,
    pack,
    rebalance,
    to_pieces,
)
from knowledge.parsers.blocks import markdown_table
from knowledge.parsers.headings import is_article
from knowledge.parsers.types import Block, ParsedDocument

DEFAULT_CONFIG = ChunkingConfig()


def chunk_document(doc: ParsedDocument, config: ChunkingConfig = DEFAULT_CONFIG) -> list[ChunkDraft]:
    """Turn a parsed document into ordered chunk drafts; never merges across sections."""
    return _Chunker(doc, config).run()


def run_meta(meta: dict) -> dict:
    """What decides whether text blocks may share a chunk: their meta less the per-paragraph OCR confidence."""
    return {key: value for key, value in meta.items() if key != "ocr_confidence"}


@dataclass
class _OpenHeading:
    block: Block
    level: int
    path: list[str]


class _Chunker:
    def __init__(self, doc: ParsedDocument, config: ChunkingConfig) -> None:
        self.doc = doc
        self.config = config
        self.drafts: list[ChunkDraft] = []
        self.stack: list[tuple[int, str]] = []
        self.run_blocks: list[Block] = []
        self.open_heading: _OpenHeading | None = None  # latest heading whose section has no body yet
        self.carried: list[str] = []  # headings of empty sections, for the next chunk's first lines
        self.article = ""  # the label of an article whose text is still to come
        self.in_article = ""  # the article the chunks now made stand in (their metadata's ``article``)

    def run(self) -> list[ChunkDraft]:
        for block in self.doc.blocks:
            if not block.text.strip():
                continue
            if block.kind == "heading":
                self._heading(block)
                continue
            self.open_heading = None
            if self.article:
                if block.kind == "text":
                    block = replace(block, text=f"{self.article} {block.text.lstrip()}")
                else:
                    self.carried.append(self.article)
                self.article = ""
            if block.kind == "text":
                if self.run_blocks and run_meta(self.run_blocks[-1].meta) != run_meta(block.meta):
                    self._flush_text()  # e.g. two JSONL records: keep each record's fields with its text
                self.run_blocks.append(block)
            elif block.kind == "table":
                before = self.run_blocks[-1].text if self.run_blocks else ""
                self._flush_text()
                self._table(block, before=before)
            elif block.kind == "faq":
                self._flush_text()
                self._faq(block)
            else:
                raise ValueError(f"unknown block kind {block.kind!r}")
        self._flush_text()
        if self.open_heading is not None:
            self._close_empty(self.open_heading)
        if self.article:
            self.carried.append(self.article)
        if self.carried and self.drafts:  # empty sections at the end: into the last chunk
            last = self.drafts[-1]
            last.content += "\n" + "\n".join(self.carried)
            last.enriched += "\n" + "\n".join(self.carried)
        elif self.carried:  # nothing but headings: they are the document's only text
            content, self.carried = "\n".join(self.carried), []
            self._add("heading", content, self._enriched_text(content, []), [], [None], {})
        for ordinal, draft in enumerate(self.drafts):
            draft.ordinal = ordinal
        return self.drafts

    @property
    def path(self) -> list[str]:
        return [title for _, title in self.stack]

    # --- headings and sections ---

    def _heading(self, block: Block) -> None:
        self._flush_text()
        text = " ".join(block.text.split())
        if self.article:
            self.carried.append(self.article)
            self.article = ""
        if is_article(text):
            self.article = self.in_article = text  # its text follows; the headings open around it stay open
            return
        self.in_article = ""
        level = min(max(block.level, 1), 6)
        if block.meta.get("title"):
            return  # the document's title (a parser said so): it heads every chunk already, opening no section
        if self.open_heading is not None and level <= self.open_heading.level:
            self._close_empty(self.open_heading)
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, text))
        self.open_heading = _OpenHeading(block=block, level=level, path=self.path)

    def _close_empty(self, heading: _OpenHeading) -> None:
        """A heading with no body and no subsection: its text goes into the next chunk, or its title would be
        unfindable; the document's title needs no chunk (it is embedded with every chunk)."""
        text = " ".join(heading.block.text.split())
        if text != " ".join(self.doc.title.split()):
            self.carried.append(text)
        self.open_heading = None

    # --- text ---

    def _flush_text(self) -> None:
        if not self.run_blocks:
            return
        blocks, self.run_blocks = self.run_blocks, []
        path = self.path
        meta = run_meta(blocks[0].meta)
        config = self.config
        # Leave room for the overlap so that it can be added without passing max_chars.
        budget = config.max_chars - config.overlap_chars
        chunks = rebalance(pack(mark_tables(to_pieces(blocks, config.max_chars)), budget), config.min_chars, budget)
        for index, chunk in enumerate(chunks):
            overlap = overlap_before(chunks[index - 1], chunk, config) if index and config.overlap_chars else []
            content = join_pieces(overlap + chunk)
            metadata = dict(meta)
            if overlap:
                metadata["overlap_chars"] = len(content) - len(join_pieces(chunk))
            caption = ""
            table = (overlap + chunk)[0].table
            if table is not None:
                # The chunk opens inside a table begun in an earlier chunk: it gets the table's header row (so that
                # it reads, is indexed and is quoted as a table) and its caption (embedded and keyword-indexed).
                caption, header = table
                content = f"{header}\n{content}"
                metadata["table_header_chars"] = len(header) + 1
                if caption:
                    metadata["caption"] = caption
            confidences = [piece.confidence for piece in overlap + chunk if piece.confidence is not None]
            if confidences:  # OCR text: the least confident paragraph speaks for the chunk
                metadata["ocr_confidence"] = min(confidences)
            pages = [piece.page for piece in overlap + chunk]
            self._add("text", content, self._enriched_text(content, path, caption=caption), path, pages, metadata)

    # --- tables ---

    def _table(self, block: Block, *, before: str = "") -> None:
        header_lines, body_lines, columns = table_lines(block)
        limit = self.config.table_max_chars
        if len(block.text.strip()) <= limit or not body_lines:
            parts = [body_lines]
        else:
            parts = []
            current: list[str] = []
            for line in body_lines:
                if current and len("\n".join(header_lines + current + [line])) > limit:
                    parts.append(current)
                    current = []
                current.append(line)
            parts.append(current)
        path = self.path
        caption = str(block.meta.get("caption") or block.meta.get("title") or "").strip() or caption_of(before)
        # Page of each body row, for a table that runs over a page break (the header row is first).
        row_pages = list(block.meta.get("row_pages") or [])[-len(body_lines):] if body_lines else []
        first_row = 0
        for number, part in enumerate(parts, start=1):
            content = "\n".join(header_lines + part) if len(parts) > 1 else block.text.strip()
            metadata = {**{k: v for k, v in block.meta.items() if k != "row_pages"},
                        "columns": list(columns), "row_count": len(part)}
            pages = [block.page, block.page_end]
            if len(parts) > 1 and len(row_pages) == len(body_lines):
                pages = row_pages[first_row:first_row + len(part)]
            first_row += len(part)
            if len(parts) > 1:
                metadata.update(part=number, parts=len(parts))
            if caption:
                metadata["caption"] = caption  # keyword-indexed with the chunk (documents.keyword_text)
            lines = []
            if path and self.config.section_depth_in_enriched:
                lines.append(f"主题：{self._topic(path)}")
            if caption:
                lines.append(f"表格：{caption}")
            if any(columns):
                lines.append("字段：" + "、".join(cell for cell in columns if cell))
            enriched = "\n".join(lines) + "\n\n" + content if lines else content
            self._add("table", content, enriched, path, pages, metadata)

    # --- FAQ ---

    def _faq(self, block: Block) -> None:
        question = str(block.meta.get("question", "")).strip()
        answer = str(block.meta.get("answer", "")).strip()
        content = block.text.strip()
        qa = f"问：{question}\n答：{answer}" if question or answer else content
        enriched = f"{self.doc.title}\n{qa}" if self.doc.title else qa
        metadata = {**block.meta, "question": question, "answer": answer}
        self._add("faq", content, enriched, self.path, [block.page], metadata)

    # --- shared ---

    def _topic(self, path: list[str]) -> str:
        return " > ".join(path[: self.config.section_depth_in_enriched])

    def _enriched_text(self, content: str, path: list[str], *, caption: str = "") -> str:
        return enriched_text(title=self.doc.title, section_path=path, content=content,
                             depth=self.config.section_depth_in_enriched, caption=caption)

    def _add(self, chunk_type: str, content: str, enriched: str, path: list[str],
             pages: list[int | None], metadata: dict) -> None:
        if self.in_article:
            metadata = {**metadata, "article": self.in_article}
        if self.carried:
            lead = "\n".join(self.carried)
            self.carried = []
            metadata = {**metadata, "heading_chars": len(lead) + 1}
            at = enriched.rfind(content)  # the body ends the enriched text (after the title, topic, caption)
            enriched = f"{enriched[:at]}{lead}\n{enriched[at:]}" if at >= 0 else f"{lead}\n{enriched}"
            content = f"{lead}\n{content}"
        known = [page for page in pages if page is not None]
        self.drafts.append(
            ChunkDraft(
                ordinal=len(self.drafts),
                chunk_type=chunk_type,
                content=content,
                enriched=enriched,
                section_path=list(path),
                page_start=min(known) if known else None,
                page_end=max(known) if known else None,
                metadata=metadata,
            )
        )


def table_lines(block: Block) -> tuple[list[str], list[str], tuple[str, ...]]:
    """``(header lines, body lines, header cells)`` of a table block's Markdown."""
    if block.rows:
        lines = markdown_table(block.rows).split("\n")
        return lines[:2], lines[2:], tuple(block.rows[0])
    lines = [line for line in block.text.strip().split("\n") if line.strip()]
    header_size = 2 if len(lines) > 1 and TABLE_SEPARATOR.match(lines[1].strip()) else 1
    header = lines[:header_size]
    columns = tuple(cell.strip() for cell in header[0].strip().strip("|").split("|")) if header else ()
    return header, lines[header_size:], columns
