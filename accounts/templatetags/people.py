"""``{{ user|display_name }}``: a person by their name where they have one (``core.names``)."""
from __future__ import annotations

from django import template

from core.names import display_name as _display_name

register = template.Library()


@register.filter
def display_name(user) -> str:
    return _display_name(user)


@register.filter
def has_name(user) -> bool:
    """Whether the person has a name of their own (the username is then shown beside it)."""
    return user is not None and _display_name(user) != getattr(user, "username", "")
