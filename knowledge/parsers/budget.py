"""Budgets of one parse: what a file may cost in text, pages, OCR pages and inflated PDF bytes.

The parent process sets memory, processor-time and wall-time budgets on the child that parses
(``knowledge.parsers.worker``); the budgets here are the ones only the parser can count, checked
where the parser reads. Exceeding one raises ``ResourceLimit`` (error code ``resource_limit``), whose
message names the budget and its limit in a fixed form that ``knowledge.errors.document_failure_text`` reads back
to tell people which budget it was. A preview (``ParseOptions.preview``) is not failed by the page,
OCR-page, character and time budgets: it stops reading there and records in ``Usage.cut_short``
where and why it was cut short.
"""
from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass

from knowledge.parsers.types import Block, ParsedDocument, ParseError, ParseOptions

# Budget name -> what its limit counts (the unit of the number in the message).
BUDGETS = {
    "memory": "MiB",
    "cpu": "seconds of processor time",
    "time": "seconds",
    "characters": "characters",
    "pages": "pages",
    "ocr_pages": "scanned pages",
    "inflated": "MiB inflated",
}
_MESSAGE = re.compile(r"^(?P<budget>[a-z_]+) budget exceeded \(limit (?P<limit>\d+)\b")


class ResourceLimit(ParseError):
    """The parse went over one of its budgets; ``budget`` is a key of ``BUDGETS``, ``limit`` its number."""

    def __init__(self, budget: str, limit: float, detail: str) -> None:
        if budget not in BUDGETS:
            raise ValueError(f"unknown budget {budget!r}")
        super().__init__("resource_limit", f"{budget} budget exceeded (limit {int(limit)} {BUDGETS[budget]}): {detail}")
        self.budget = budget
        self.limit = int(limit)
        self.detail = detail


def budget_of(message: str) -> tuple[str, int] | None:
    """``(budget, limit)`` from a ``ResourceLimit`` message (as stored with a failed document), else None."""
    found = _MESSAGE.match(message or "")
    if found is None or found["budget"] not in BUDGETS:
        return None
    return found["budget"], int(found["limit"])


def cut_short(options: ParseOptions, budget: str, limit: int, **read) -> None:
    """Record that a preview stopped reading at ``budget`` (the first cut counts)."""
    if options.usage.cut_short is None:
        options.usage.cut_short = {"budget": budget, "limit": int(limit), **read}


def over_count(options: ParseOptions, budget: str, limit: int, count: int, what: str) -> bool:
    """Whether ``count`` is over ``limit``: an ingestion fails here, a preview is told to stop (True)."""
    if count <= limit:
        return False
    if not options.preview:
        raise ResourceLimit(budget, limit, f"{what}: {count}")
    return True


def out_of_time(options: ParseOptions, next_step: float = 0.0) -> bool:
    """For a preview: whether a step expected to take ``next_step`` seconds would end past its soft deadline."""
    return options.deadline is not None and time.monotonic() + next_step > options.deadline


def limit_characters(doc: ParsedDocument, options: ParseOptions) -> ParsedDocument:
    """``doc`` within ``options.max_chars`` of block text: an ingestion over it fails, a preview keeps the first ones."""
    total = sum(len(block.text) for block in doc.blocks)
    if total <= options.max_chars:
        return doc
    if not options.preview:
        raise ResourceLimit("characters", options.max_chars, f"the file holds {total} characters of text")
    kept: list[Block] = []
    left = options.max_chars
    for block in doc.blocks:
        if left <= 0:
            break
        if len(block.text) > left:
            block = dataclasses.replace(block, text=block.text[:left], rows=None if block.rows else block.rows)
        kept.append(block)
        left -= len(block.text)
    cut_short(options, "characters", options.max_chars)
    return dataclasses.replace(doc, blocks=kept)


@dataclass
class Meter:
    """A running count against one limit (inflated bytes), raising ``ResourceLimit`` once it passes."""

    budget: str
    limit: int  # in bytes
    used: int = 0

    def add(self, amount: int) -> None:
        self.used += amount
        if self.used > self.limit:
            raise ResourceLimit(self.budget, self.limit // (1024 * 1024),
                                f"more than {self.limit} bytes were inflated from the file's compressed streams")

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)
