"""Model numbers in follow-ups (chat/rewrite.py): the subjects of a spec sheet's questions, swapped or carried."""
from __future__ import annotations

import re

from knowledge.retrieval.text import MODEL_RE

BARE_NUMBER_RE = re.compile(r"^\d{1,5}[A-Za-z]{0,3}$")
# A follow-up that opens with a pronoun and asks something of it: 「它多少钱」「它重多少」「这款支持快充吗」.
PRONOUN_LEAD_RE = re.compile(r"^(?:它们|他们|她们|它|他|她|这个|这款|这台|这种|该产品|该型号|该款|其)(?:的)?(?=\S)")
ARTICLE_RE = re.compile(r"\b(?:the|a|an)\b", re.IGNORECASE)
EN_PRONOUN_RE = re.compile(r"\b(?:it|its|this one|that one)\b", re.IGNORECASE)


def models_in(text: str) -> list[str]:
    """The model numbers a text names, in order: 「XK-500 的主轴」 → ["XK-500"]."""
    return [m.group(0) for m in MODEL_RE.finditer(text)]


def swap_model(previous: str, core: str) -> str:
    """XK-800 for XK-500, S20 for S10, RO-800 for RO-400 when the follow-up says only 「800」: the model numbers are
    the subjects of a spec sheet's questions (a jieba cut splits them: XK / - / 800)."""
    before = models_in(previous)
    if not before:
        return previous
    mine = models_in(core)
    if not mine and BARE_NUMBER_RE.match(core.strip()):
        m = next(MODEL_RE.finditer(previous))
        mine = [f"{m.group(1)}{m.group(2)}{core.strip()}"]
    for new in mine:
        if new in previous:
            continue
        old = next((o for o in before if o != new), None)
        if old is not None:
            previous = previous.replace(old, new, 1)
    return previous


def pronoun_led(core: str, previous: str, subject: str) -> str | None:
    """「它多少钱」 after a question about S20 → 「S20多少钱」: the pronoun replaced by the previous subject (its
    model number when it names one), the follow-up's own predicate kept whole, so the reader reads a question."""
    models = models_in(previous)
    m = PRONOUN_LEAD_RE.match(core)
    if m:
        who = models[0] if models else subject
        rest = core[m.end():]
        return f"{who}{'' if who[-1:].isascii() is False else ' '}{rest}".strip() if who and rest else None
    if models and EN_PRONOUN_RE.search(core):
        return EN_PRONOUN_RE.sub(models[0], core, count=1)
    return None
