"""The language models a KB may answer with, as the app that keeps the model endpoints offers them.

knowledge/ names no such app: providers/ registers its catalogue here when Django starts
(providers/apps.py: ``offer(model_choices, choice_get)``), so a site without it offers none.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class Offered(Protocol):
    """One model the site offers (providers.catalog.ModelChoice has these and more)."""

    @property
    def choice(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def is_default(self) -> bool: ...


def _none_listed() -> Sequence[Offered]:
    return ()


def _none_found(choice: str) -> Offered | None:
    return None


_listing: Callable[[], Sequence[Offered]] = _none_listed
_finding: Callable[[str], Offered | None] = _none_found


def offer(listing: Callable[[], Sequence[Offered]], finding: Callable[[str], Offered | None]) -> None:
    """Set where the offered models come from: ``listing()`` every choice, ``finding(choice)`` one or None."""
    global _listing, _finding
    _listing, _finding = listing, finding


def offered() -> Sequence[Offered]:
    return _listing()


def find(choice: str) -> Offered | None:
    return _finding(choice)
