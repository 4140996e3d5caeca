"""What the people pages share: the staff check, running a service with its refusal shown on the page."""
from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from core.errors import ApplicationError

PER_PAGE = 25


def staff_required(view):
    """Signed in (else the sign-in page) and staff (else the styled 403 page)."""
    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_staff:
            raise PermissionDenied("Only staff can manage people.")
        return view(request, *args, **kwargs)
    return wrapped


def attempt(request, action, success: str) -> bool:
    """Run ``action()``; its ApplicationError becomes an error message on the next page, else ``success`` does."""
    try:
        action()
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return False
    if success:
        messages.success(request, success)
    return True
