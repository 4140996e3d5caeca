"""The embedded chat: a script (or an iframe) that puts an assistant's chat on the sites its owner lists.

Keyed by the assistant's id (``/embed/<id>.js``, ``/embed/<id>/chat/``, ``…/chat/stream/``, ``…/conversations/``,
``…/feedback/``), not a secret: the guard is the list of exact origins (``Assistant.allowed_origins``), checked by the
page's CSP ``frame-ancestors``, by the page itself (403 ``origin_not_allowed``) and on every API call, with the signed
visitor *ticket* in ``X-Zhiku-Ticket``, which is also the CSRF defence (the views are csrf-exempt). These are
browser-side guards; docs/integrations.md "Embedded chat" has the reasoning.
"""
from __future__ import annotations

import json
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.utils.translation import gettext
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from assistants.errors import AssistantsError
from assistants.models import Assistant
from assistants.visitor_http import (
    conversations_response,
    error_response,
    exception_response,
    feedback_response,
    page_context,
    stream_response,
)
from assistants.visitors import ticket_issue, ticket_read, visitor_new
from chat.models import Channel
from chat.services import in_thread
from core.errors import ApplicationError, fail, message

TICKET_HEADER = "X-Zhiku-Ticket"
CSP_REPLACE = "_csp_replace"
"""The response attribute django-csp's middleware reads a per-response CSP override from (its ``csp_replace``)."""


def embed_get(assistant_id: int) -> Assistant:
    """An assistant that may be embedded (it lists at least one origin); NotFound ``assistant_not_found`` otherwise."""
    assistant = Assistant.objects.select_related("owner").filter(pk=assistant_id).first()
    if assistant is None or not assistant.allowed_origins or not assistant.owner.is_active:
        raise fail(AssistantsError.ASSISTANT_NOT_FOUND)
    return assistant


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (an Origin header is one already), lowercased; "" when it has none."""
    parts = urlsplit((url or "").strip()[:2000])
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ""
    return f"{parts.scheme}://{parts.netloc}".lower()


def own_origin(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}".lower()


def origin_allowed(assistant: Assistant, origin: str) -> bool:
    """Exact membership: the same scheme, host and port as one of the listed origins."""
    return bool(origin) and origin in {o.lower() for o in assistant.allowed_origins or []}


def _parent_origin(request: HttpRequest) -> str:
    """The origin of the page that embeds the chat page: the frame's Referer, else the bubble's ``origin``."""
    referer = origin_of(request.headers.get("Referer", ""))
    if referer and referer != own_origin(request):
        return referer
    return origin_of(request.GET.get("origin", ""))


@require_GET
def embed_script(request: HttpRequest, assistant_id: int) -> HttpResponse:
    """The bubble: a button in the corner of the host page that opens the chat page in an iframe."""
    try:
        embed_get(assistant_id)
    except ApplicationError:
        return HttpResponse("/* zhiku: no such embeddable assistant */\n", status=404,
                            content_type="application/javascript; charset=utf-8")
    config = {"chat": request.build_absolute_uri(f"/embed/{assistant_id}/chat/"),
              "open": gettext("Open the chat"), "close": gettext("Close the chat")}
    response = render(request, "assistants/embed.js", {"config": json.dumps(config, ensure_ascii=True)},
                      content_type="application/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"  # loaded by other sites' pages
    return response


@require_GET
@xframe_options_exempt  # framing is decided by the listed origins' frame-ancestors below
def embed_chat(request: HttpRequest, assistant_id: int) -> HttpResponse:
    try:
        assistant = embed_get(assistant_id)
    except ApplicationError:
        return render(request, "assistants/visitor_refused.html", {"text": message(AssistantsError.ASSISTANT_NOT_FOUND)}, status=404)
    parent = _parent_origin(request)
    if not origin_allowed(assistant, parent):
        response = render(request, "assistants/visitor_refused.html",
                          {"text": message(AssistantsError.ORIGIN_NOT_ALLOWED, origin=parent or "-")}, status=403)
        # The refusal itself may be shown in any frame: it holds nothing but the sentence, and an unlisted
        # site's bubble then says why it does not work instead of showing a blank, blocked frame.
        setattr(response, CSP_REPLACE, {"frame-ancestors": ["*"]})
        response["Cache-Control"] = "no-store"
        return response
    else:
        ticket = ticket_issue(assistant_id=assistant.pk, visitor=visitor_new(), origin=parent)
        context = page_context(assistant, base=f"/embed/{assistant.pk}/", ticket=ticket, embedded=True)
        context["config"]["storageKey"] = f"zhiku-embed:{assistant.pk}:{parent}"
        response = render(request, "assistants/visitor_chat.html", context)
    setattr(response, CSP_REPLACE, {"frame-ancestors": sorted(assistant.allowed_origins)})
    response["Cache-Control"] = "no-store"
    return response


def _resolve(request: HttpRequest, assistant_id: int):
    """(assistant, visitor, error response) of an API request from an embedded chat page."""
    try:
        assistant = embed_get(assistant_id)
    except ApplicationError as exc:
        return None, "", exception_response(exc)
    sent = request.headers.get("Origin")
    if sent is not None and not origin_of(sent):
        # "Origin: null" (a sandboxed frame, a data: or file: page) or junk is an origin that is not listed,
        # not an absent one (RFC 6454 §7.3).
        return None, "", error_response(AssistantsError.ORIGIN_NOT_ALLOWED, origin=sent[:100] or "-")
    origin = origin_of(sent or "") or origin_of(request.headers.get("Referer", ""))
    if origin and origin != own_origin(request) and not origin_allowed(assistant, origin):
        return None, "", error_response(AssistantsError.ORIGIN_NOT_ALLOWED, origin=origin)
    ticket = ticket_read(request.headers.get(TICKET_HEADER, ""), assistant_id=assistant.pk)
    if ticket is None:
        return None, "", error_response(AssistantsError.EMBED_TICKET_INVALID)
    visitor, parent = ticket
    if not origin_allowed(assistant, parent):
        return None, "", error_response(AssistantsError.ORIGIN_NOT_ALLOWED, origin=parent)
    return assistant, visitor, None


@csrf_exempt  # the ticket header is the CSRF defence (module docstring, 3.)
@require_POST
async def embed_stream(request: HttpRequest, assistant_id: int) -> HttpResponseBase:
    assistant, visitor, failure = await in_thread(_resolve)(request, assistant_id)
    if failure is not None:
        return failure
    return await stream_response(request, assistant=assistant, channel=Channel.EMBED, visitor=visitor)


@require_GET
def embed_conversations(request: HttpRequest, assistant_id: int, conversation_id: int | None = None) -> HttpResponse:
    assistant, visitor, failure = _resolve(request, assistant_id)
    if failure is not None:
        return failure
    return conversations_response(assistant=assistant, visitor=visitor, conversation_id=conversation_id)


@csrf_exempt  # as embed_stream
@require_POST
def embed_feedback(request: HttpRequest, assistant_id: int) -> HttpResponse:
    assistant, visitor, failure = _resolve(request, assistant_id)
    if failure is not None:
        return failure
    return feedback_response(request, assistant=assistant, visitor=visitor)
