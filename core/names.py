"""How a person is named on the pages and in the API: their name where they have one, else their username.

A Chinese name is written family name first with no space (last_name 「张」, first_name 「伟」: 「张伟」); a Western
one given name first, as Django's ``get_full_name`` writes it (「Ada Lovelace」). Used for member lists, the people
picker, the audit log, KB owners and assistant owners (``accounts/templatetags/people.py`` for templates).
"""
from __future__ import annotations

import re
from typing import Any

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]")


def full_name(first_name: str | None, last_name: str | None) -> str:
    """「张伟」 from (「伟」, 「张」); 「Ada Lovelace」 from (「Ada」, 「Lovelace」); one part alone; ``""`` for none."""
    first, last = " ".join((first_name or "").split()), " ".join((last_name or "").split())
    if first and last:
        return f"{last}{first}" if _CJK.search(first + last) else f"{first} {last}"
    return first or last


def display_name(user: Any) -> str:
    """The person's name, or their username when they have none; ``""`` for no user."""
    if user is None:
        return ""
    name = full_name(getattr(user, "first_name", ""), getattr(user, "last_name", ""))
    return name or str(getattr(user, "username", "") or "")
