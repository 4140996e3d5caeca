"""Testing an endpoint's connection: one real request through the ``openai`` SDK, its outcome as a code and a message."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.utils.translation import gettext

from core.errors import message
from core.net.pinned_httpx import pinned_http_client
from providers.errors import ProvidersError
from providers.models import ModelEndpoint
from providers.secrets import InvalidToken, secret_decrypt

DETAIL_CHARS = 300
MODELS_LISTED = 50


@dataclass(frozen=True)
class ProbeResult:
    """``ok`` and a ``message``; when not ok, a registered ``code`` (core/errors.py); ``http_status`` as answered."""

    ok: bool
    code: str
    message: str
    http_status: int | None = None
    model: str = ""
    """The model the completion asked for ("" when the test listed the endpoint's models)."""
    models: list[str] = field(default_factory=list)
    """The model ids the endpoint listed (a test without model names)."""
    elapsed_ms: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _detail(exc, key: str) -> str:
    """The provider's own error text, short, with the key masked should the provider have echoed it."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        text = body["message"]
    elif body is not None:
        text = str(body)
    else:
        text = str(getattr(exc, "message", "") or exc)
    if key and len(key) >= 4:
        text = text.replace(key, "***")
    return text[:DETAIL_CHARS]


def _failure(exc: Exception, key: str, seconds: float) -> tuple[str, str, int | None]:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "endpoint_timeout", message(ProvidersError.ENDPOINT_TIMEOUT, seconds=round(seconds)), None
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ("endpoint_unauthorized", message(ProvidersError.ENDPOINT_UNAUTHORIZED, status=exc.status_code, detail=_detail(exc, key)),
                exc.status_code)
    if isinstance(exc, openai.APIStatusError):
        return ("endpoint_http_error", message(ProvidersError.ENDPOINT_HTTP_ERROR, status=exc.status_code, detail=_detail(exc, key)),
                exc.status_code)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        text = f"{type(cause).__name__}: {cause}"
        if key:
            text = text.replace(key, "***")
        return "endpoint_unreachable", message(ProvidersError.ENDPOINT_UNREACHABLE, error=text[:DETAIL_CHARS]), None
    error = f"{type(exc).__name__}: {str(exc)[:DETAIL_CHARS]}"
    return "endpoint_bad_answer", message(ProvidersError.ENDPOINT_BAD_ANSWER, error=error), None


def endpoint_test(*, endpoint: ModelEndpoint, model: str = "") -> ProbeResult:
    """Ask ``endpoint`` for a one-token completion of ``model`` (default: its default or first model), or, when it
    names no model, for its model list. Never raises for what the endpoint does: the result says it."""
    try:
        key = secret_decrypt(endpoint.api_key_encrypted)
    except InvalidToken:
        return ProbeResult(ok=False, code="invalid_api_key", message=message(ProvidersError.INVALID_API_KEY, "unreadable"))
    model = model or endpoint.default_model or next(iter(endpoint.model_names or []), "")
    seconds = float(settings.ZHIKU_LLM_TEST_TIMEOUT)
    from openai import OpenAI

    started = time.perf_counter()
    listed: list[str] = []
    try:
        with OpenAI(base_url=endpoint.base_url, api_key=key or "not-needed", timeout=seconds, max_retries=0,
                    http_client=pinned_http_client(seconds)) as client:
            if model:
                client.chat.completions.create(model=model, messages=[{"role": "user", "content": "ping"}], max_tokens=1)
            else:
                listed = [m.id for m in client.models.list().data][:MODELS_LISTED]
    except Exception as exc:  # noqa: BLE001 - every SDK and transport failure is a result, not an error of the request
        code, text, status = _failure(exc, key, seconds)
        return ProbeResult(ok=False, code=code, message=text, http_status=status, model=model,
                           elapsed_ms=round((time.perf_counter() - started) * 1000))
    return ProbeResult(ok=True, code="", message=gettext("The endpoint answered."), http_status=200, model=model, models=listed,
                       elapsed_ms=round((time.perf_counter() - started) * 1000))
