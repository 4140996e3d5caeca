"""What changed between two texts, for a chunk's history: a structured diff (runs kept, deleted, inserted) and a
unified diff. Plain Python (difflib), no Django.

Chinese has no spaces between words, so the runs are compared character by character for CJK text and word by word
for Latin words and numbers (a changed 「一百元」 → 「一百二十元」 marks 「二十」 inserted, not the whole line).
"""
from __future__ import annotations

import difflib
import re

# A Latin word or number, a run of white space, or any one other character (a CJK character, a punctuation mark).
_TOKEN = re.compile(r"[A-Za-z0-9_]+|\s+|.", re.DOTALL)
# Beyond this many tokens the two texts are compared line by line (SequenceMatcher grows with the product of lengths).
TOKEN_LIMIT = 20000


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def text_diff(before: str, after: str) -> list[dict[str, str]]:
    """The runs of ``after`` against ``before``, in order: ``{"op": "equal" | "delete" | "insert", "text": …}``.

    Joining the ``equal`` and ``delete`` runs gives ``before``; the ``equal`` and ``insert`` runs give ``after``. A
    replaced run is a ``delete`` followed by an ``insert``; neighbouring runs of one kind are merged.
    """
    a, b = _tokens(before), _tokens(after)
    if len(a) + len(b) > TOKEN_LIMIT:
        a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    runs: list[dict[str, str]] = []

    def add(op: str, parts: list[str]) -> None:
        text = "".join(parts)
        if not text:
            return
        if runs and runs[-1]["op"] == op:
            runs[-1]["text"] += text
        else:
            runs.append({"op": op, "text": text})

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            add("equal", a[i1:i2])
        else:
            add("delete", a[i1:i2])
            add("insert", b[j1:j2])
    return runs


def unified_diff(before: str, after: str, *, before_name: str = "before", after_name: str = "after") -> str:
    """A unified diff of the two texts line by line (``diff -u``'s form), "" when they are the same."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), fromfile=before_name, tofile=after_name,
                                 lineterm="")
    return "\n".join(lines)
