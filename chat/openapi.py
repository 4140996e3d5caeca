"""``POST /api/chat/stream/`` in the OpenAPI schema (a drf-spectacular post-processing hook).

The SSE view is an async Django view, not a DRF one (DRF cannot stream from async code), so
drf-spectacular does not see it; this hook describes it by hand, with the error component
the DRF views' errors use (``core.api.schema``).
"""
from __future__ import annotations

from core.api.fields import Rule
from core.api.schema import ERROR_DESCRIPTIONS, NON_SPACE, state_rules
from knowledge.services.query_input import MAX_KBS, MAX_QUERY_CHARS

PATH = "/api/chat/stream/"

ASK = {
    "type": "object",
    "description": "The websocket's `ask` message (docs/chat.md); `type` may be left out.",
    "properties": {
        "type": {"type": "string", "enum": ["ask"]},
        "conversation": {"type": "integer", "nullable": True, "minimum": 1,
                         "description": "Continue this conversation of yours; null starts a new one."},
        "kb_ids": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": MAX_KBS,
                   "description": "The knowledge bases to search; empty: the conversation's (a new conversation "
                                  "needs at least one: 400 `no_kbs`)."},
        "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "pattern": NON_SPACE},
    },
    "required": ["question"],
}
state_rules(ASK, (Rule("no_kbs", "A new conversation (conversation left out or null) names at least one knowledge base "
                             "in kb_ids.",
                       {"anyOf": [{"required": ["conversation"], "properties": {"conversation": {"type": "integer"}}},
                                  {"required": ["kb_ids"], "properties": {"kb_ids": {"minItems": 1}}}]}),))

EVENTS = (
    "One frame per event, `event: <type>` then `data: <JSON>`: `start`, `rewrite`, `sources`, `token` "
    "(repeated), then `finish`, or `error` when the answer fails after streaming began (docs/chat.md)."
)

# The view's own checks, in order: authentication (401), CSRF for a session (403), the body (413, 400),
# then the conversation and every KB (404).
ERROR_STATUSES = (400, 401, 403, 404, 413)


def _error_response(status: int) -> dict:
    return {
        "description": ERROR_DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    }


def chat_stream_operation() -> dict:
    return {
        "operationId": "chat_stream",
        "summary": "Ask a question and receive the answer as Server-Sent Events",
        "description": "Errors found before streaming are JSON error responses with their status; later "
                       "failures arrive as an `error` event.",
        "tags": ["chat"],
        "security": [{"tokenAuth": []}, {"cookieAuth": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": ASK}}},
        "responses": {
            "200": {"description": EVENTS, "content": {"text/event-stream": {"schema": {"type": "string"}}}},
            **{str(status): _error_response(status) for status in ERROR_STATUSES},
        },
    }


def add_chat_stream(result, generator, request, public):
    """Add the SSE operation to the generated schema (drf-spectacular calls every hook with these arguments)."""
    result["paths"][PATH] = {"post": chat_stream_operation()}
    return result
