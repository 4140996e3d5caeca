"""Text rules shared by the retrieval core and chat's context assembly (``context``, ``chat/extractive/``)."""

from __future__ import annotations

import re

# A chunk or sentence ending with these announces what follows (a table, a list, a code block), often chunked on its
# own: the chat turn fetches that chunk, and the extractive answer quotes what it announces.
ANNOUNCING = ("：", ":")


def norm_text(text: str) -> str:
    """``text`` without whitespace: exact duplicates up to whitespace (near-duplicates are the vectors' job)."""
    return "".join(text.split())

# A model number: Latin letters then digits (XK-500, S20, Air13, RO-400, E5), letters or a suffix after them (A1s,
# X3-Pro). The subject of a spec sheet's questions: the follow-up rewrite swaps it, the answer quotes its row.
MODEL_RE = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{1,8})([-_ ]?)(\d{1,5}[A-Za-z]{0,3}(?:-[A-Za-z0-9]{1,6})?)(?![A-Za-z0-9])")
