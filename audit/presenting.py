"""How an entry's changes read on the page: one line per field, ``before → after``."""
from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class ChangeLine:
    field: str
    before: str | None
    after: str


def _text(value) -> str:
    if value is None:
        return "∅"
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False) if value else "∅"
    return str(value)


def change_lines(changes: dict) -> list[ChangeLine]:
    """A pair ``[before, after]`` reads as a change; any other value as a fact of the action."""
    lines = []
    for name, value in (changes or {}).items():
        if isinstance(value, list) and len(value) == 2:
            lines.append(ChangeLine(name, _text(value[0]), _text(value[1])))
        else:
            lines.append(ChangeLine(name, None, _text(value)))
    return lines
