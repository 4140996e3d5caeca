"""The platforms' callbacks: ``/bots/<kind>/<callback_id>/``, CSRF-exempt (each is signed by its platform instead;
bots/callback.py checks it, stores the question and acknowledges at once)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from bots.callback import handle


@csrf_exempt  # signed by the platform (bots/crypto.py), never a browser's form
def callback(request: HttpRequest, kind: str, callback_id: str) -> HttpResponse:
    return handle(request, kind, callback_id)
