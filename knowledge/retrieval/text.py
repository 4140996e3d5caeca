"""Text rules shared by the retrieval core and chat's context assembly (``context``, ``chat/extractive/``)."""

from __future__ import annotations

# A chunk or sentence ending with these announces what follows (a table, a list, a code block), often chunked on its
# own: the chat turn fetches that chunk, and the extractive answer quotes what it announces.
ANNOUNCING = ("：", ":")


def norm_text(text: str) -> str:
    """``text`` without whitespace: exact duplicates up to whitespace (near-duplicates are the vectors' job)."""
    return "".join(text.split())
