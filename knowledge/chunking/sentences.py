"""Text into sentences, and a sentence over the length limit cut where no word breaks."""
from __future__ import annotations

import re

# A sentence ends after CJK/ASCII terminal punctuation (plus any closing quotes or brackets),
# after an ASCII period followed by whitespace, or at a newline.
_SENTENCE_END = re.compile(r"""[。！？；!?;…]+[”’」』）)\]"'》]*|\.["')\]]*(?=\s)|\n""")
# Places where a sentence longer than the limit can be cut without breaking a word.
_SOFT_BREAK = re.compile(r"[，,、：:\s]")


def split_sentences(text: str) -> list[str]:
    """Split after 。！？；!?; (and closing quotes), after '. ', and at newlines; punctuation stays.

    Sentences are stripped and empty ones dropped; joining the raw pieces restores the input.
    """
    return [piece.strip() for piece in raw_sentences(text) if piece.strip()]


def raw_sentences(text: str) -> list[str]:
    """Lossless sentence pieces: ``"".join(result) == text``; whitespace-only tails join the piece before."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        pieces.append(text[start:match.end()])
        start = match.end()
    pieces.append(text[start:])
    merged: list[str] = []
    for piece in pieces:
        if merged and not piece.strip():
            merged[-1] += piece
        elif piece:
            merged.append(piece)
    return merged


def hard_split(sentence: str, limit: int) -> list[str]:
    """Cut a sentence longer than ``limit``, preferring a comma or space in the second half of each window."""
    parts = []
    while len(sentence) > limit:
        window = sentence[:limit]
        cut = limit
        for match in _SOFT_BREAK.finditer(window):
            if match.end() >= limit // 2:
                cut = match.end()
        parts.append(sentence[:cut])
        sentence = sentence[cut:]
    if sentence:
        parts.append(sentence)
    return parts
