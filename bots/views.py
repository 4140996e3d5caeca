"""The platforms' callbacks: ``/bots/<kind>/<callback_id>/``, CSRF-exempt (each is signed by its platform instead;
bots/callback.py checks it, stores the question and acknowledges at once)."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from bots.callback import handle
from bots.platforms import PLATFORMS


@csrf_exempt  # signed by the platform (bots/platforms/), never a browser's form
def callback(request: HttpRequest, kind: str, callback_id: str) -> HttpResponse:
    if kind not in PLATFORMS:
        raise Http404  # the same 404 as a path that does not route
    return handle(request, kind, callback_id)
