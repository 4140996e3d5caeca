"""A fake OpenAI-compatible chat-completions server on loopback, so the real ``openai`` client runs in tests.

It speaks the wire protocol: ``POST /v1/chat/completions`` answers JSON, or
with ``"stream": true`` SSE ``data: {chunk}`` lines ending ``data: [DONE]``
over chunked transfer encoding. Behaviours, set per test:

* ``chunks``: the answer's text pieces, streamed in order (``say`` cuts a reply into pieces, e.g. to
  split the not-found marker across chunks);
* ``break_after``: close the connection after that many pieces (mid-stream failure);
* ``stall_after``: stop sending after that many pieces, without closing (timeout);
* ``stall_headers``: never send the response at all (a request that times out, then is retried);
* ``delay``: seconds between pieces (for cancel tests);
* ``rewrite``: the content of non-streamed replies (the follow-up rewrite);
* ``report_usage``: answer ``stream_options.include_usage`` with a last chunk of ``usage`` and no choices,
  as OpenAI does (``prompt_tokens``: the characters of the prompt; ``completion_tokens``: the pieces sent).
* ``api_key``: the only key accepted (``Authorization: Bearer <key>``); any other is answered 401 as OpenAI does;
* ``model_ids``: what ``GET /v1/models`` lists.

It records every request body, each request's ``Authorization`` header (``authorizations``, in order,
``GET /v1/models`` included) and, per streamed request, how many pieces it sent and whether the client
went away before the end.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class StreamRecord:
    body: dict[str, Any]
    sent: int = 0
    finished: bool = False
    client_gone: bool = False


@dataclass
class FakeLLM:
    chunks: list[str] = field(default_factory=lambda: ["知库专业版", "的价格是", "每年 9800 元", "[1]。"])
    break_after: int | None = None
    stall_after: int | None = None
    stall_headers: bool = False
    delay: float = 0.0
    rewrite: str = "知库专业版的价格是多少？"
    status: int = 200
    report_usage: bool = True
    api_key: str | None = None
    model_ids: list[str] = field(default_factory=lambda: ["fake-model", "fake-large"])
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    streams: list[StreamRecord] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self.client_gone = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _refused(self) -> bool:
                fake.authorizations.append(self.headers.get("Authorization") or "")
                if fake.api_key is None or self.headers.get("Authorization") == f"Bearer {fake.api_key}":
                    return False
                fake._json(self, 401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                                 "code": "invalid_api_key"}})
                return True

            def do_GET(self):  # noqa: N802 - http.server's method name
                if self._refused():
                    return
                if self.path.rstrip("/") != "/v1/models":
                    fake._json(self, 404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                fake._json(self, 200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                                    "owned_by": "fake"} for m in fake.model_ids]})

            def do_POST(self):  # noqa: N802 - http.server's method name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                if self._refused():
                    return
                if fake.stall_headers:
                    fake._stop.wait(30)
                    return
                if fake.status != 200:
                    payload = json.dumps({"error": {"message": "fake failure", "type": "server_error"}}).encode()
                    self.send_response(fake.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if body.get("stream"):
                    fake._stream(self, body)
                else:
                    fake._complete(self, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def say(self, text: str, size: int) -> None:
        """Stream ``text`` in pieces of ``size`` characters."""
        self.chunks = [text[i:i + size] for i in range(0, len(text), size)]

    # --- protocol ---------------------------------------------------------------
    def _chunk(self, text: str | None, finish: str | None = None) -> bytes:
        delta = {"role": "assistant", "content": text} if text is not None else {}
        data = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": "fake-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    @staticmethod
    def usage_for(body: dict[str, Any], sent: int) -> dict[str, int]:
        """The usage this server reports for a streamed request ``body`` that sent ``sent`` pieces."""
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
        return {"prompt_tokens": prompt, "completion_tokens": sent, "total_tokens": prompt + sent}

    def _usage_chunk(self, body: dict[str, Any], sent: int) -> bytes:
        data = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": "fake-model", "choices": [], "usage": self.usage_for(body, sent)}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    @staticmethod
    def _json(handler, status: int, data: dict) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    @staticmethod
    def _write_chunked(handler, payload: bytes) -> None:
        handler.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        handler.wfile.flush()

    def _stream(self, handler, body) -> None:
        record = StreamRecord(body=body)
        self.streams.append(record)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        try:
            for i, text in enumerate(self.chunks):
                if self.break_after is not None and i >= self.break_after:
                    handler.close_connection = True
                    handler.connection.shutdown(2)  # mid-body: the chunked message never completes
                    return
                if self.stall_after is not None and i >= self.stall_after:
                    self._stop.wait(30)
                    return
                if self.delay and i and self._stop.wait(self.delay):
                    return
                self._write_chunked(handler, self._chunk(text))
                record.sent += 1
            self._write_chunked(handler, self._chunk(None, "stop"))
            if self.report_usage and (body.get("stream_options") or {}).get("include_usage"):
                self._write_chunked(handler, self._usage_chunk(body, record.sent))
            self._write_chunked(handler, b"data: [DONE]\n\n")
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
            record.finished = True
        except (BrokenPipeError, ConnectionResetError, OSError):
            record.client_gone = True
            self.client_gone.set()

    def _complete(self, handler, body) -> None:
        data = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": "fake-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": self.rewrite}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        payload = json.dumps(data, ensure_ascii=False).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    # --- inspection -------------------------------------------------------------------
    @property
    def stream_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("stream")]

    @property
    def completion_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if not r.get("stream")]

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
