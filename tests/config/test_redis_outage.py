"""Issue 8: a Redis outage degrades, never strands.

The platform runs as it does in production (daphne in its own process, Redis for the cache, the
channel layer and the Celery broker), on a Redis server this test starts on a spare port and then
kills. Login, search, upload (ingested in the web process when no task can be queued), SSE chat
and websocket chat must all keep working; they used to answer 500, strand the upload as `pending`
for ever and close the chat socket with 1011.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
import redis
import requests
from websockets.sync.client import connect as ws_connect

from tests.browser import daphne, free_port

REDIS_SERVER = shutil.which("redis-server")
TEXT = "# 退货政策\n\n收到商品七天内可以申请退货，运费由买家承担。质量问题由卖家承担运费。\n"

pytestmark = [
    pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server (make test installs it)"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def doomed_redis():
    """A throwaway Redis server on a spare port: (url, process)."""
    port = free_port()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=0.2).ping()
            break
        except redis.RedisError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.05)
    yield url, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def token_for(user) -> str:
    from tests.helpers import api_token

    return api_token(user)


def sse_events(response) -> list[dict]:
    return [json.loads(line[len("data:"):]) for line in response.text.splitlines() if line.startswith("data:")]


def test_with_redis_killed_login_search_upload_and_chat_keep_working(doomed_redis, alice, kb, ingest, tmp_path, settings):
    url, redis_proc = doomed_redis
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]  # one the server checks
    alice.set_password("pw-alice")
    alice.save()
    ingest(kb, {"policy.md": TEXT})
    token = token_for(alice)
    headers = {"Authorization": f"Token {token}"}
    with daphne(tmp_path / "daphne.log", REDIS_URL=url, ZHIKU_INGEST_MODE="celery", ZHIKU_MEDIA_ROOT=str(tmp_path / "media"),
                ZHIKU_AUTO_CALIBRATE="0") as base:
        search = {"query": "退货运费谁承担？", "kb_ids": [kb.pk]}
        first = requests.post(f"{base}/api/search/", json=search, headers=headers, timeout=60)
        again = requests.post(f"{base}/api/search/", json=search, headers=headers, timeout=60)
        assert first.status_code == again.status_code == 200 and again.json()["cached"] is True  # Redis was in use

        redis_proc.kill()
        redis_proc.wait(timeout=10)

        # Token login: its rate throttle lives in the cache and steps aside; django-axes counts in PostgreSQL.
        login = requests.post(f"{base}/api/auth/token/", json={"username": "alice", "password": "pw-alice"}, timeout=60)
        assert login.status_code == 200, login.text
        headers = {"Authorization": f"Token {login.json()['token']}"}  # a new token, issued without Redis
        session = requests.Session()
        page = session.get(f"{base}/accounts/login/", timeout=60)
        assert page.status_code == 200
        signed_in = session.post(f"{base}/accounts/login/", timeout=60, allow_redirects=False, headers={"Referer": base + "/"},
                                 data={"username": "alice", "password": "pw-alice",
                                       "csrfmiddlewaretoken": session.cookies["csrftoken"]})
        assert signed_in.status_code == 302

        found = requests.post(f"{base}/api/search/", json=search, headers=headers, timeout=60)
        assert found.status_code == 200 and found.json()["cached"] is False and found.json()["results"]

        # No broker: the upload is ingested in the web process instead of staying pending.
        upload = requests.post(f"{base}/api/kbs/{kb.pk}/documents/", headers=headers, timeout=60,
                               files={"files": ("refund.md", "# 退款\n\n退款在审核通过后三个工作日内原路退回。\n".encode())})
        assert upload.status_code == 202, upload.text
        doc_id = upload.json()["documents"][0]["id"]
        deadline = time.monotonic() + 90
        while (status := requests.get(f"{base}/api/kbs/{kb.pk}/documents/{doc_id}/", headers=headers,
                                      timeout=60).json()["status"]) in ("pending", "processing"):
            assert time.monotonic() < deadline, "the upload was stranded"
            time.sleep(0.2)
        assert status == "ready"

        question = {"kb_ids": [kb.pk], "question": "退货运费谁承担？"}
        sse = requests.post(f"{base}/api/chat/stream/", json=question, headers=headers, timeout=60)
        assert sse.status_code == 200 and sse_events(sse)[-1]["type"] == "finish"

        ws_url = base.replace("http://", "ws://") + f"/ws/chat/?token={token}"
        with ws_connect(ws_url, additional_headers={"Origin": base}, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "ask", "conversation": None, **question}))
            events = []
            while not events or events[-1]["type"] not in ("finish", "error"):
                events.append(json.loads(ws.recv(timeout=60)))
        assert events[-1]["type"] == "finish" and "运费" in events[-1]["answer"]
