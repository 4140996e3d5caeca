"""The platform under mixed load (locust): searches, SSE and websocket chats, uploads, one document replaced.

Run it through ``scripts/loadtest/run.py`` (``make loadtest``), which creates the
knowledge base this file reads from ``$ZHIKU_LT_SETUP`` (a JSON file: token,
kb_id, queries, marker source name) and reads back the summary this file writes
to ``$ZHIKU_LT_SUMMARY`` when locust quits: locust's figures per request kind
plus the platform's own counts (chats started/finished/interrupted, documents
uploaded, searches that mixed two versions of the replaced document).

Users, by weight: ``Searcher`` (most of the traffic), ``SSEChatter``,
``WebsocketChatter`` (locust has no websocket client: websocket-client inside a
plain ``User``, its turns fired as request events so they show in the stats),
``Uploader``; and exactly one ``MarkerReplacer``, which keeps uploading a new
version of one document while ``Searcher``s look for it.
"""
from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import websocket  # websocket-client: blocking sockets, which gevent's monkey-patching makes cooperative
from locust import HttpUser, User, between, events, task
from marker import MARKER, MARKER_CHUNKING, marker_document  # scripts/loadtest/marker.py, beside this file

SETUP = json.loads(Path(os.environ["ZHIKU_LT_SETUP"]).read_text()) if os.environ.get("ZHIKU_LT_SETUP") else {}
POLL_SECONDS = 1.0
READY_TIMEOUT = float(os.environ.get("ZHIKU_LT_READY_TIMEOUT", "120"))

# The platform's own counts, beside locust's request statistics. Greenlets share one
# process; the lock is for the websocket-client's helper threads, if any.
counts: Counter = Counter()
uploaded_ids: list[int] = []
ready_ids: set[int] = set()
notes: list[str] = []
_lock = threading.Lock()


def count(key: str, n: int = 1) -> None:
    with _lock:
        counts[key] += n


def note(text: str) -> None:
    """Keep the first few violations word for word, for the report."""
    with _lock:
        if len(notes) < 10:
            notes.append(text)


def auth() -> dict[str, str]:
    return {"Authorization": f"Token {SETUP['token']}"}


def upload(client, name: str, body: bytes, label: str, form: dict | None = None) -> int | None:
    """Upload one Markdown file into the KB; its document id, or None (the failure is in locust's stats)."""
    with client.post(f"/api/kbs/{SETUP['kb_id']}/documents/", files={"files": (name, body, "text/markdown")},
                     data=form or {}, headers=auth(), name=label, catch_response=True) as response:
        if response.status_code != 202:
            response.failure(f"upload answered {response.status_code}")
            return None
        return int(response.json()["documents"][0]["id"])


def wait_ready(client, document_id: int, label: str = "document poll") -> str:
    """Poll the document until it is ready or failed (or READY_TIMEOUT passes); its last status."""
    deadline = time.monotonic() + READY_TIMEOUT
    status = "unknown"
    while time.monotonic() < deadline:
        with client.get(f"/api/kbs/{SETUP['kb_id']}/documents/{document_id}/", headers=auth(), name=label,
                        catch_response=True) as response:
            if response.status_code == 200:
                status = response.json()["status"]
            elif response.status_code == 404:
                return "gone"  # replaced by a newer version (the marker document)
            else:
                response.failure(f"poll answered {response.status_code}")
        if status in ("ready", "failed"):
            return status
        time.sleep(POLL_SECONDS)
    return status


class Searcher(HttpUser):
    """Searches with real questions; one search in four looks for the document being replaced."""

    weight = 6
    wait_time = between(0.5, 1.5)

    @task(3)
    def search(self) -> None:
        self.client.post("/api/search/", json={"query": random.choice(SETUP["queries"]), "kb_ids": [SETUP["kb_id"]]},
                         headers=auth(), name="search")

    @task(1)
    def search_marker(self) -> None:
        """Every result list must come from one version of the marker document, and the keyword path must answer.

        ``debug`` (never cached) shows each path's raw hits: the keyword path answered when BM25 returned
        hits. Hits that reach no result mean the index searched was older than the chunks served.
        """
        body = {"query": SETUP["marker_query"], "kb_ids": [SETUP["kb_id"]], "debug": True}
        with self.client.post("/api/search/", json=body, headers=auth(), name="search (replaced document)",
                              catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"search answered {response.status_code}")
                return
            payload = response.json()
            mine = [r for r in payload["results"] if r["document"]["source_name"] == SETUP["marker_source"]]
            documents = {r["document"]["id"] for r in mine}
            markers = {m for r in mine for m in MARKER.findall(r["content"])}
            count("marker_searches")
            if not mine:
                count("marker_searches_without_the_document")
            if len(documents) > 1 or len(markers) > 1:
                count("version_mix_violations")
                note(f"versions mixed: documents {sorted(documents)}, markers {sorted(markers)}")
            keyword_hits = payload["debug"]["kbs"][str(SETUP["kb_id"])]["keyword"]
            if not (payload["keyword_available"] and keyword_hits):
                count("keyword_path_missing")
                note(f"keyword path missing: keyword_available={payload['keyword_available']}, notes={payload['notes']}")
            elif not any(r["scores"]["bm25_rank"] is not None for r in payload["results"]):
                count("keyword_hits_not_served")
                note(f"keyword hits {[h['chunk_id'] for h in keyword_hits[:5]]} reached no result "
                     f"(results {[r['chunk_id'] for r in payload['results']]})")


class SSEChatter(HttpUser):
    """Asks a question over ``POST /api/chat/stream/``; the turn is finished at its ``finish`` event."""

    weight = 2
    wait_time = between(1, 3)

    @task
    def chat(self) -> None:
        started = time.perf_counter()
        body = {"kb_ids": [SETUP["kb_id"]], "question": random.choice(SETUP["queries"])}
        with self.client.post("/api/chat/stream/", json=body, headers=auth(), stream=True, name="chat (SSE)",
                              catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"chat answered {response.status_code}")
                return
            count("chats_started")
            count("sse_chats_started")
            try:
                kinds = [json.loads(line[5:])["type"] for line in response.iter_lines(decode_unicode=True)
                         if line and line.startswith("data:")]
            except Exception as exc:  # noqa: BLE001 - whatever breaks the stream is counted as a failed turn, not raised
                count("chats_interrupted")
                response.failure(f"stream broken: {type(exc).__name__}")
                return
            # locust times a streamed request to its headers; the figure wanted is the whole turn.
            response.request_meta["response_time"] = (time.perf_counter() - started) * 1000
            if "finish" in kinds:
                count("chats_finished")
                response.success()
            elif "error" in kinds:
                count("chats_errored")
                response.failure("error event")
            else:
                count("chats_interrupted")
                response.failure("stream ended without finish")


class WebsocketChatter(User):
    """Asks a question over ``/ws/chat/`` (a new socket per turn, token in the query string, an allowed Origin)."""

    weight = 1
    wait_time = between(1, 3)

    @task
    def chat(self) -> None:
        base = urlsplit(self.host)
        scheme = "wss" if base.scheme == "https" else "ws"
        url = f"{scheme}://{base.netloc}/ws/chat/?token={SETUP['token']}"
        started = time.perf_counter()
        length, exception, began = 0, None, False
        try:
            ws = websocket.create_connection(url, timeout=60, origin=f"{base.scheme}://{base.netloc}")
            try:
                ws.send(json.dumps({"type": "ask", "kb_ids": [SETUP["kb_id"]], "question": random.choice(SETUP["queries"])}))
                while True:
                    frame = ws.recv()
                    length += len(frame)
                    event = json.loads(frame)
                    if event["type"] == "start" and not began:
                        began = True
                        count("chats_started")
                        count("ws_chats_started")
                    elif event["type"] == "finish":
                        count("chats_finished")
                        break
                    elif event["type"] == "error":
                        if began:
                            count("chats_errored")
                        exception = RuntimeError(f"error event {event.get('code')}")
                        break
            finally:
                ws.close()
        except Exception as exc:  # noqa: BLE001 - any failure of the socket turn is reported to locust as this request's
            if began:
                count("chats_interrupted")
            exception = exc
        self.environment.events.request.fire(
            request_type="WS", name="chat (websocket)", response_time=(time.perf_counter() - started) * 1000,
            response_length=length, exception=exception, context={})


class Uploader(HttpUser):
    """Uploads a small document under a new name, then polls it until it is ready."""

    weight = 1
    wait_time = between(2, 5)

    @task
    def upload_and_wait(self) -> None:
        name = f"lt-upload-{uuid.uuid4().hex[:10]}.md"
        passage = random.choice(SETUP["passages"])
        document_id = upload(self.client, name, f"# 上传测试 {name}\n\n{passage}\n".encode(), "upload")
        if document_id is None:
            return
        with _lock:
            uploaded_ids.append(document_id)
        if wait_ready(self.client, document_id) == "ready":
            with _lock:
                ready_ids.add(document_id)


class MarkerReplacer(HttpUser):
    """One user that keeps replacing the marker document with its next version (version k names only 标记k)."""

    fixed_count = 1
    wait_time = between(0.5, 1)

    def on_start(self) -> None:
        self.version = int(SETUP.get("marker_version", 1))

    @task
    def replace(self) -> None:
        self.version += 1
        document_id = upload(self.client, SETUP["marker_source"], marker_document(self.version), "upload (replace document)",
                             form=MARKER_CHUNKING)
        if document_id is None:
            return
        count("marker_versions_uploaded")
        if wait_ready(self.client, document_id, label="document poll (replace)") == "ready":
            count("marker_versions_ready")


def _entry(stats) -> dict:
    return {
        "requests": stats.num_requests, "failures": stats.num_failures, "rps": round(stats.total_rps, 2),
        "p50_ms": stats.get_response_time_percentile(0.5), "p95_ms": stats.get_response_time_percentile(0.95),
        "avg_ms": round(stats.avg_response_time, 1),
    }


@events.quitting.add_listener
def write_summary(environment, **_kwargs) -> None:
    path = os.environ.get("ZHIKU_LT_SUMMARY")
    if not path:
        return
    stats = environment.stats
    summary = {
        "requests": {name: _entry(entry) for (name, _method), entry in sorted(stats.entries.items())},
        "total": _entry(stats.total),
        "errors": [{"name": e.name, "method": e.method, "error": str(e.error), "occurrences": e.occurrences}
                   for e in stats.errors.values()],
        "counts": dict(counts),
        "uploaded_document_ids": list(uploaded_ids),
        "ready_during_run": len(ready_ids),
        "violations": list(notes),
    }
    Path(path).write_text(json.dumps(summary, ensure_ascii=False, indent=2))
