"""The chat page."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from accounts.preferences import chat_kbs_chosen
from knowledge.access import kbs_for_user


@login_required
@ensure_csrf_cookie
def chat_page(request: HttpRequest) -> HttpResponse:
    """Pick readable KBs, ask, watch the answer stream with its sources, rate it, browse past conversations."""
    kbs: list[dict[str, Any]] = [{"id": kb.pk, "name": kb.name, "description": kb.description[:200]}
                                 for kb in kbs_for_user(user=request.user).order_by("name", "id")[:200]]
    # Ticked: the person's last choice (kept server-side, accounts/preferences.py), else the KBs they own.
    chosen = set(chat_kbs_chosen(user=request.user, readable=[kb["id"] for kb in kbs]))
    for kb in kbs:
        kb["chosen"] = kb["id"] in chosen
    return render(request, "chat/chat.html", {"kbs": kbs})
