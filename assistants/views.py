"""The assistants' console pages (应用): the list, the create/edit form, and an assistant's page (keys, usage,
share link and embed code, a panel to try it).

As the KB pages (knowledge/views.py), the pages render what they read and leave changes to the REST API
(assistants/api.py), which the page scripts (static/assistants/) call with the session and the CSRF token.
Another user's assistant is a 404.
"""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from assistants.models import Assistant, ShareAccess
from assistants.serializers import MAX_RATE_LIMIT, share_path
from assistants.services import MAX_ORIGINS, MAX_SUGGESTED, assistant_get_for_user, assistants_of
from core.errors import NotFound
from core.http.address import local_host, public_base, url_host
from knowledge.access import kbs_for_user
from knowledge.models import KnowledgeBase
from knowledge.services.kbs import llm_models
from knowledge.services.query_input import MAX_TOP_K


def _assistant_for(request: HttpRequest, assistant_id: int) -> Assistant:
    try:
        return assistant_get_for_user(user=request.user, assistant_id=assistant_id)
    except NotFound:
        raise Http404("Assistant not found.") from None


def _readable_kbs(request: HttpRequest, chosen: list[int]) -> list[KnowledgeBase]:
    """The KBs the caller can read: the assistant's own (``chosen``) first, in its order, then the rest by name."""
    kbs = {kb.pk: kb for kb in kbs_for_user(user=request.user).order_by("name", "id")[:500]}
    return [kbs[i] for i in chosen if i in kbs] + [kb for pk, kb in kbs.items() if pk not in chosen]


@login_required
def assistant_list(request: HttpRequest) -> HttpResponse:
    """The caller's assistants with their KBs and whether they are shared."""
    assistants = list(assistants_of(user=request.user).prefetch_related("kb_links__kb")[:200])
    for assistant in assistants:
        assistant.kb_names = [link.kb.name for link in sorted(assistant.kb_links.all(), key=lambda link: link.position)]
    return render(request, "assistants/list.html", {"assistants": assistants})


def _form(request: HttpRequest, assistant: Assistant | None) -> HttpResponse:
    chosen = assistant.kb_ids() if assistant is not None else []
    return render(request, "assistants/form.html", {
        "assistant": assistant, "kbs": _readable_kbs(request, chosen), "chosen": chosen, "llm_models": llm_models(),
        "share_choices": ShareAccess.choices, "max_top_k": MAX_TOP_K, "max_suggested": MAX_SUGGESTED,
        "max_origins": MAX_ORIGINS,
        "suggested_text": "\n".join(assistant.suggested_questions or []) if assistant else "",
        "origins_text": "\n".join(assistant.allowed_origins or []) if assistant else "",
    })


@login_required
@ensure_csrf_cookie
def assistant_new(request: HttpRequest) -> HttpResponse:
    return _form(request, None)


@login_required
@ensure_csrf_cookie
def assistant_edit(request: HttpRequest, assistant_id: int) -> HttpResponse:
    return _form(request, _assistant_for(request, assistant_id))


@login_required
@ensure_csrf_cookie
def assistant_page(request: HttpRequest, assistant_id: int) -> HttpResponse:
    """An assistant: its settings at a glance, keys, usage, share link and embed code, and the try panel."""
    assistant = _assistant_for(request, assistant_id)
    readable = {kb.pk: kb for kb in kbs_for_user(user=assistant.owner).filter(pk__in=assistant.kb_ids())}
    kbs = [{"id": i, "name": readable[i].name if i in readable else "", "lost": i not in readable} for i in assistant.kb_ids()]
    base = public_base(request)  # ZHIKU_PUBLIC_URL: the share link, embed code and callback URLs as outsiders reach them
    return render(request, "assistants/detail.html", {
        "assistant": assistant, "kbs": kbs, "share_path": share_path(assistant), "base_url": base,
        "base_local": local_host(url_host(base)),
        "share_label": ShareAccess(assistant.share_access).label, "max_rate_limit": MAX_RATE_LIMIT,
    })
