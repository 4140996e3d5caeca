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

_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN_WORD_RE = re.compile(r"[A-Za-z]{2,}")


def asked_in_english(question: str) -> bool:
    """A question with Latin words and no CJK character (「XK-300 main motor power」; not 「XK-300 的功率」)."""
    return not _CJK_RE.search(question) and len(_LATIN_WORD_RE.findall(question)) >= 2
