"""What a KB answers when it holds nothing on a question, in the asker's language.

A KB keeps the text its owner wrote (``not_found_text``, and ``not_found_text_en`` for a question asked in
English): that is data and is never translated. A KB without one of its own holds the shipped default
(``knowledge.retrieval.defaults.NOT_FOUND_TEXT``, Chinese); it is answered in the language of the request instead:
the console's language switch, then Accept-Language (``LocaleMiddleware``), the chat websocket's handshake language
(``chat/consumers.py``), Chinese by default (docs/i18n.md). The retrieval core imports no Django, so it carries the
stored text and the language is applied here, where a result leaves the platform (the search API, a chat turn).
"""
from __future__ import annotations

from typing import Any

from django.utils.translation import gettext, gettext_noop

from knowledge.retrieval import defaults
from knowledge.retrieval.text import asked_in_english

# English id; its Chinese translation is exactly the stored default, so a zh reader sees what was always shown.
DEFAULT_NOT_FOUND = gettext_noop("Sorry, nothing in the knowledge base answers this.")


def not_found_text(text: str) -> str:
    """``text`` (a KB's or an assistant's not-found text) as the asker reads it: the owner's own as written; the
    default (or nothing) in the active language."""
    if text.strip() and text.strip() != defaults.NOT_FOUND_TEXT:
        return text
    return gettext(DEFAULT_NOT_FOUND)


def kb_not_found_text(kb: Any, question: str) -> str:
    """A KB's not-found text for ``question``: its English one for a question asked in English when it has one,
    else its own, else the default in the active language."""
    if kb.not_found_text_en and asked_in_english(question):
        return str(kb.not_found_text_en)
    return not_found_text(kb.not_found_text)
