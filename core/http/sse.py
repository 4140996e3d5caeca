"""The response every Server-Sent Events stream answers with (the chat's, the assistants', OpenAI's chunks)."""
from __future__ import annotations

from collections.abc import AsyncIterator

from django.http import StreamingHttpResponse

CONTENT_TYPE = "text/event-stream; charset=utf-8"


def event_stream_response(frames: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """``frames`` streamed as ``text/event-stream``, never cached and never buffered by a proxy."""
    response = StreamingHttpResponse(frames, content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass events through as they come
    return response
