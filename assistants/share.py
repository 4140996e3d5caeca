"""Share links: ``/s/<token>/``, the assistant's chat page for anyone with the link or for signed-in members.

The token is ``Assistant.share_token``; ``share_access = off`` or a rotated token is 404 ``share_not_found``, page and
API alike; ``members`` sends an anonymous visitor of the page to sign in (of the API: 401 ``share_members_only``).
Each visitor has their own conversations (assistants/visitors.py), named by a signed HttpOnly cookie; the page is
same-site, so every POST is CSRF-checked. Below the link: ``chat/stream/``, ``conversations/[<id>/]``, ``feedback/``
(docs/integrations.md "Share link").
"""
from __future__ import annotations

from typing import TypeVar

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from assistants.errors import AssistantsError
from assistants.models import Assistant, ShareAccess
from assistants.visitor_http import (
    conversations_response,
    error_response,
    exception_response,
    feedback_response,
    page_context,
    stream_response,
)
from assistants.visitors import COOKIE_SALT, VISITOR_DAYS, member_visitor, visitor_new
from chat.models import Channel
from chat.services import in_thread
from chat.sse import csrf_failure_reason
from core.errors import ApplicationError, CoreError, fail, message

COOKIE = "zhiku_visitor"
COOKIE_AGE = VISITOR_DAYS * 24 * 3600
ResponseT = TypeVar("ResponseT", bound=HttpResponseBase)


def share_get(token: str) -> Assistant:
    """The assistant whose live share link is ``token``; NotFound ``share_not_found`` otherwise."""
    assistant = (Assistant.objects.select_related("owner").exclude(share_access=ShareAccess.OFF)
                 .filter(share_token=str(token)[:64]).first()) if token else None
    if assistant is None or not assistant.owner.is_active:
        raise fail(AssistantsError.SHARE_NOT_FOUND)
    return assistant


def _cookie_visitor(request: HttpRequest) -> str | None:
    value = request.get_signed_cookie(COOKIE, default=None, salt=COOKIE_SALT, max_age=COOKIE_AGE)
    return value if isinstance(value, str) and value.startswith("v-") else None


def _visitor(request: HttpRequest, user) -> tuple[str, bool]:
    """(visitor id, whether it is new and must be set as the cookie)."""
    if user.is_authenticated:
        return member_visitor(user), False
    known = _cookie_visitor(request)
    return (known, False) if known else (visitor_new(), True)


def _keep(response: ResponseT, visitor: str, new: bool, request: HttpRequest) -> ResponseT:
    if new:
        response.set_signed_cookie(COOKIE, visitor, salt=COOKIE_SALT, max_age=COOKIE_AGE, httponly=True,
                                   samesite="Lax", secure=request.is_secure(), path="/s/")
    return response


def _not_found_page(request: HttpRequest) -> HttpResponse:
    return render(request, "assistants/visitor_refused.html", {"text": message(AssistantsError.SHARE_NOT_FOUND)}, status=404)


@require_GET
@ensure_csrf_cookie
def share_page(request: HttpRequest, token: str) -> HttpResponse:
    """The assistant's chat page: its name, opening message and suggested questions."""
    try:
        assistant = share_get(token)
    except ApplicationError:
        return _not_found_page(request)
    if assistant.share_access == ShareAccess.MEMBERS and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    visitor, new = _visitor(request, request.user)
    response = render(request, "assistants/visitor_chat.html", page_context(assistant, base=f"/s/{token}/"))
    return _keep(response, visitor, new, request)


async def _resolve(request: HttpRequest, token: str):
    """(assistant, visitor, new, error response) of an API request of a share link."""
    try:
        assistant = await in_thread(share_get)(token)
    except ApplicationError as exc:
        return None, "", False, exception_response(exc)
    user = await request.auser()
    if assistant.share_access == ShareAccess.MEMBERS and not user.is_authenticated:
        return None, "", False, error_response(AssistantsError.SHARE_MEMBERS_ONLY)
    visitor, new = _visitor(request, user)
    return assistant, visitor, new, None


@csrf_exempt  # checked below, after the link is found, with the error shape of the API
@require_POST
async def share_stream(request: HttpRequest, token: str) -> HttpResponseBase:
    assistant, visitor, new, failure = await _resolve(request, token)
    if failure is not None:
        return failure
    reason = csrf_failure_reason(request)
    if reason:
        return error_response(CoreError.PERMISSION_DENIED, "csrf", reason=reason)
    response = await stream_response(request, assistant=assistant, channel=Channel.SHARE, visitor=visitor)
    return _keep(response, visitor, new, request)


@require_GET
async def share_conversations(request: HttpRequest, token: str, conversation_id: int | None = None) -> HttpResponse:
    assistant, visitor, _new, failure = await _resolve(request, token)
    if failure is not None:
        return failure
    return await in_thread(conversations_response)(assistant=assistant, visitor=visitor, conversation_id=conversation_id)


@csrf_exempt  # checked below, as in share_stream
@require_POST
async def share_feedback(request: HttpRequest, token: str) -> HttpResponse:
    assistant, visitor, _new, failure = await _resolve(request, token)
    if failure is not None:
        return failure
    reason = csrf_failure_reason(request)
    if reason:
        return error_response(CoreError.PERMISSION_DENIED, "csrf", reason=reason)
    return await in_thread(feedback_response)(request, assistant=assistant, visitor=visitor)
