"""Who may call the people API's staff-only operations (the rest is decided by the services and selectors)."""
from __future__ import annotations

from accounts.errors import AccountsError
from core.errors import fail


def staff_only(request) -> None:
    """403 ``staff_required`` for anyone but staff."""
    if not request.user.is_staff:
        raise fail(AccountsError.STAFF_REQUIRED)
