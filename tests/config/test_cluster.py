"""Issue 12: several processes, one platform. Real processes on the real Redis and the test database.

- A search process sees another process's change at its very next search: its own BM25 index (L1),
  the Redis tier and the cached search results are all keyed by the KB version.
- Two Celery workers given every ingestion task twice ingest each document once.
- `scripts/cluster.py` starts nginx, two daphne processes and a worker, a search goes through the
  proxy, a killed web process is routed around and replaced, and `stop` leaves nothing running.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
import redis
import requests
from websockets.sync.client import connect as ws_connect

from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.services.chunks import chunk_update
from knowledge.services.documents import document_delete
from tests.browser import ROOT, free_port, server_env
from tests.helpers import celery_broker, redis_available, start_celery_worker, wait_for

REDIS_URL = "redis://127.0.0.1:6379/13"
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)

needs_redis = pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs the Redis server at 127.0.0.1:6379 (make test starts one)")
pytestmark = [needs_redis, pytest.mark.django_db(transaction=True)]

POLICY = "# 停车\n\n紫藤花园的访客停车费每小时十元，业主免费。\n"
OTHER = "# 门禁\n\n访客进入小区需要在门岗登记身份证件。\n"


def platform_env(prefix: str, **overrides: str) -> dict[str, str]:
    """A platform process's environment on the test database, this test's Redis namespace, no pytest variables."""
    env = server_env(REDIS_URL=REDIS_URL, ZHIKU_REDIS_PREFIX=prefix, ZHIKU_AUTO_CALIBRATE="0", PYTHONUNBUFFERED="1", **overrides)
    return {k: v for k, v in env.items() if not k.startswith("PYTEST")}


def forget_namespace(prefix: str) -> None:
    """Delete this test's keys (and only them: other runs may share the Redis database)."""
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(f"{prefix}*", count=1000):
        client.delete(key)


@pytest.fixture
def namespace():
    prefix = f"zhiku-test-{uuid.uuid4().hex[:12]}"
    yield prefix
    forget_namespace(prefix)


# --- (a) a change made in one process, seen by another's next search -----------------------------


class Searcher:
    """``tests/searcher.py`` in its own process: it keeps its caches between searches, as a web process does."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        self._stderr = open(log, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.searcher"], cwd=ROOT, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        assert json.loads(self._line()) == {"ready": True}

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=10)
            pytest.fail(f"the search process ended:\n{self.log.read_text(errors='replace')[-3000:]}")
        return line

    def search(self, kb, query: str, user) -> dict:
        self.proc.stdin.write(json.dumps({"username": user.username, "kb_id": kb.pk, "query": query}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._stderr.close()


@pytest.fixture
def searcher(namespace, tmp_path):
    process = Searcher(platform_env(namespace), tmp_path / "searcher.log")
    yield process
    process.close()


def contents(reply: dict) -> list[str]:
    return [c["content"] for c in reply["chunks"]]


def test_another_process_sees_an_edit_a_new_version_and_a_deletion_at_its_next_search(alice, kb, ingest, searcher):
    policy, _ = ingest(kb, {"policy.md": POLICY, "gate.md": OTHER})
    first = searcher.search(kb, "紫藤花园", alice)
    assert any("紫藤花园" in c for c in contents(first)) and first["cached"] is False
    # A different query (no cached result) is answered from the process's own index: its L1 is warm.
    assert searcher.search(kb, "紫藤 停车费", alice)["bm25_source"] == "l1"
    assert searcher.search(kb, "紫藤花园", alice)["cached"] is True  # and the first answer is cached in Redis

    # An edited chunk (this process, the other's caches untouched): the old words find nothing, the new ones find it.
    chunk = Chunk.objects.get(document=policy, content__contains="紫藤花园")
    chunk_update(chunk=chunk, content="银杏广场的访客停车费每小时十元，业主免费。")
    assert chunk.pk not in [c["id"] for c in searcher.search(kb, "紫藤花园", alice)["chunks"]]
    assert [c["id"] for c in searcher.search(kb, "银杏广场", alice)["chunks"]] == [chunk.pk]

    # A new version of the file replaces the old one's chunks under the same document id (issue 38: versions), but
    # for the edited chunk, whose text the new file lacks: kept, pinned, and found by the other process too
    # (docs/chunks.md).
    (newer,) = ingest(kb, {"policy.md": "# 停车\n\n梧桐大道的访客停车费每小时八元。\n"})
    assert newer.status == DocumentStatus.READY and newer.pk == policy.pk and newer.version > policy.version
    assert [c["id"] for c in searcher.search(kb, "银杏广场", alice)["chunks"]] == [chunk.pk]
    assert Chunk.objects.get(pk=chunk.pk).metadata["pinned"] is True
    assert {c["document_id"] for c in searcher.search(kb, "梧桐大道", alice)["chunks"]} == {newer.pk}

    # A deleted document.
    document_delete(document=newer)
    assert searcher.search(kb, "梧桐大道", alice)["chunks"] == []
    assert any("门岗" in c for c in contents(searcher.search(kb, "门岗登记", alice)))  # the rest still serves


# --- (b) duplicated ingestion tasks on two workers ------------------------------------------------


def test_two_workers_given_every_task_twice_ingest_each_document_once(alice, make_kb, settings, tmp_path, monkeypatch):
    # The workers must share the test process's queue: its name comes from this process's prefix.
    prefix = settings.ZHIKU_REDIS_PREFIX
    env = platform_env(prefix, ZHIKU_INGEST_MODE="celery", ZHIKU_MEDIA_ROOT=str(settings.MEDIA_ROOT), ZHIKU_SWEEP_SECONDS="0")
    logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
    workers = [start_celery_worker(env, log, name=f"dup{i}") for i, log in enumerate(logs, 1)]
    try:
        wait_for(lambda: all(" ready." in log.read_text(errors="replace") for log in logs), 120, "the workers did not start", logs)
        kb = make_kb(alice, "duplicates")
        texts = {f"doc{i}.md": f"# 第{i}章\n\n第{i}号设备每运行{i * 7}小时清洁一次滤网。\n\n## 保修\n\n第{i}号设备保修{i}年。\n"
                 for i in range(1, 5)}
        # Queue the tasks by hand instead of on commit, each twice in a row, so both workers get the same
        # document at the same moment (as a broker redelivery or a double click would).
        monkeypatch.setattr("knowledge.ingestion.run.enqueue_ingest", lambda document_id, **_: None)
        docs = [o.document for o in document_upload(kb=kb, items=[UploadedItem(n, t.encode()) for n, t in texts.items()])]
        from knowledge.tasks import ingest_document_task

        with celery_broker(REDIS_URL):
            for doc in docs:
                ingest_document_task.apply_async(args=[doc.pk])
                ingest_document_task.apply_async(args=[doc.pk])

        def all_done() -> bool:
            received = sum(len(re.findall(r"ingest_document\[[^]]+\] succeeded", log.read_text(errors="replace"))) for log in logs)
            return received == 2 * len(docs)  # every copy was run, the duplicates included

        wait_for(all_done, 180, "the workers did not run all the tasks", logs)
        for doc in docs:
            doc.refresh_from_db()
            ordinals = list(doc.chunks.values_list("ordinal", flat=True))
            assert doc.status == DocumentStatus.READY, doc.error_message
            assert doc.ingest_attempts == 1  # claimed (and so parsed, chunked, embedded) once
            assert len(ordinals) == len(set(ordinals)) == doc.chunks_total > 0  # one set of chunks
    finally:
        for proc in workers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        forget_namespace(prefix)


# --- (c) scripts/cluster.py: nginx in front of two web processes and a worker --------------------


def free_port_run(count: int) -> int:
    """A base such that base+1 … base+count are free ports (the web processes listen on base + i)."""
    for _ in range(50):
        base = free_port() - 1
        if base + count < 65536 and all(not _listening(base + i) and _bindable(base + i) for i in range(1, count + 1)):
            return base
    pytest.fail("no run of free ports")


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its parent counts as gone)."""
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


@pytest.mark.skipif(NGINX is None, reason="needs nginx: `make test` installs it (scripts/ensure_nginx.sh)")
def test_the_cluster_serves_through_nginx_routes_around_a_killed_web_process_and_stops(alice, kb, ingest, namespace, tmp_path, settings):
    from tests.config.test_body_limits import push
    from tests.helpers import api_token

    ingest(kb, {"policy.md": POLICY})
    headers = {"Authorization": f"Token {api_token(alice)}"}
    var = tmp_path / "var"
    port, web_base = free_port(), free_port_run(2)
    env = platform_env(namespace, ZHIKU_VAR_DIR=str(var), ZHIKU_MEDIA_ROOT=str(settings.MEDIA_ROOT), ZHIKU_INGEST_MODE="celery")

    def cluster(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "scripts/cluster.py", *args], cwd=ROOT, env=env, text=True,
                              capture_output=True, timeout=timeout)

    started = cluster("start", "--web", "2", "--workers", "1", "--port", str(port), "--web-port-base", str(web_base), "--no-bootstrap")
    pids_dir = var / "cluster" / "pids"
    pids = {p.stem: int(p.read_text()) for p in pids_dir.glob("*.pid")}
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"is up: http://127.0.0.1:{port}/" in started.stdout
        assert set(pids) == {"web-1", "web-2", "worker-1", "nginx"} and all(map(running, pids.values()))
        proxy = f"http://127.0.0.1:{port}"

        # Through the proxy: an upload the worker ingests, then searches that both web processes answer.
        upload = requests.post(f"{proxy}/api/kbs/{kb.pk}/documents/", headers=headers, timeout=60,
                               files={"files": ("gate.md", OTHER.encode())})
        assert upload.status_code == 202, upload.text
        doc_id = upload.json()["documents"][0]["id"]
        # An anonymous body streams through nginx to the web process, which refuses it past its small limit: the
        # answer comes while the client still owes most of it (nginx buffering bodies would wait for all 45 MiB).
        status, refused, _, sent = push(proxy, f"/api/kbs/{kb.pk}/documents/", size=45 * 2**20, chunked=False,
                                        stop_at=16 * 2**20)
        assert status == 413 and refused["error"]["code"] == "body_too_large", (status, refused)
        wait_for(lambda: Document.objects.get(pk=doc_id).status == DocumentStatus.READY, 120, "the worker did not ingest the upload",
                 [var / "cluster" / "logs" / "worker-1.log"])
        for _ in range(4):
            found = requests.post(f"{proxy}/api/search/", json={"query": "门岗登记", "kb_ids": [kb.pk], "mode": "keyword"},
                                  headers=headers, timeout=60)
            assert found.status_code == 200 and any("门岗" in r["content"] for r in found.json()["results"])
        logs = var / "cluster" / "logs"
        assert all("POST /api/search/" in (logs / f"web-{i}.log").read_text(errors="replace") for i in (1, 2))

        # Chat through the proxy: the websocket handshake is passed on (its Origin is the proxy's address),
        # and so is the SSE stream.
        question = {"kb_ids": [kb.pk], "question": "紫藤花园的访客停车费是多少？"}
        ws_url = f"ws://127.0.0.1:{port}/ws/chat/?token={headers['Authorization'].split()[1]}"
        with ws_connect(ws_url, additional_headers={"Origin": proxy}, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "ask", "conversation": None, **question}))
            events = []
            while not events or events[-1]["type"] not in ("finish", "error"):
                events.append(json.loads(ws.recv(timeout=60)))
        assert events[-1]["type"] == "finish" and "十元" in events[-1]["answer"], events[-1]
        sse = requests.post(f"{proxy}/api/chat/stream/", json=question, headers=headers, timeout=60)
        finish = json.loads([line for line in sse.text.splitlines() if line.startswith("data:")][-1][len("data:"):])
        assert sse.status_code == 200 and finish["type"] == "finish" and "十元" in finish["answer"]

        # A killed web process: nginx sends its requests to the other one, then restart-one brings it back.
        os.kill(pids["web-2"], signal.SIGKILL)
        wait_for(lambda: not running(pids["web-2"]), 10, "web-2 did not die", [])
        answers = [requests.get(f"{proxy}/accounts/login/", timeout=30).status_code for _ in range(4)]
        assert answers == [200] * 4
        assert cluster("status").returncode == 1  # one is dead
        restarted = cluster("restart-one", "web-2")
        assert restarted.returncode == 0, restarted.stderr
        status = cluster("status")
        assert status.returncode == 0 and "DEAD" not in status.stdout, status.stdout
        pids["web-2"] = int((pids_dir / "web-2.pid").read_text())
    finally:
        stopped = cluster("stop", timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert not any(map(running, pids.values())) and not list(pids_dir.glob("*.pid"))
