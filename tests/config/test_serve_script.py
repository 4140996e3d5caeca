"""Issue 9: `make run` talks. scripts/serve.py says where the platform is only once it listens, and
reports a port in use instead of failing obscurely."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from tests.browser import ROOT, free_port, server_env

pytestmark = pytest.mark.django_db(transaction=True)


def serve(port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "scripts/serve.py", "--port", str(port)], cwd=ROOT,
                            env=server_env(PYTHONUNBUFFERED="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_address_is_printed_once_the_server_listens():
    port = free_port()
    proc = serve(port)
    try:
        deadline = time.monotonic() + 90
        for line in proc.stdout:
            if "is up" in line:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()  # really listening
                assert f"http://127.0.0.1:{port}/" in line
                break
            assert time.monotonic() < deadline and proc.poll() is None, "never came up"
        else:
            pytest.fail("serve.py ended without saying where the platform is")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_port_in_use_is_reported():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = serve(taken.getsockname()[1])
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "is in use" in out


def test_make_stop_stops_a_server_within_seconds_leaving_its_queued_documents_pending(alice, kb, tmp_path):
    """Issue 45: SIGTERM used to leave the server running its whole ingestion queue (~80 s), then failing the jobs
    that queued others ("cannot schedule new futures after interpreter shutdown"); `make stop` did not stop it."""
    import requests

    from knowledge.models import Document, DocumentStatus
    from tests.helpers import api_token

    port, var = free_port(), tmp_path / "var"
    env = server_env(PYTHONUNBUFFERED="1", ZHIKU_INGEST_MODE="thread", ZHIKU_VAR_DIR=str(var), LOG_LEVEL="INFO")
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "scripts/serve.py", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while "is up" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert (var / "run" / f"serve-{port}.pid").exists()
        headers = {"Authorization": f"Token {api_token(alice)}"}
        body = "\n\n".join(f"## 第{i}节\n\n" + f"第{i}条规定：访客须在门岗登记，车辆停放于指定区域，离开时归还临时通行证。" * 6
                           for i in range(120))
        for n in range(4):
            answer = requests.post(f"http://127.0.0.1:{port}/api/kbs/{kb.pk}/documents/", headers=headers, timeout=60,
                                   files={"files": (f"rules-{n}.md", body.replace("规定", f"规定{n}").encode())})
            assert answer.status_code == 202, answer.text
        deadline = time.monotonic() + 60
        while not Document.objects.filter(kb=kb, status=DocumentStatus.PROCESSING).exists():
            assert time.monotonic() < deadline, "no ingestion started"
            time.sleep(0.1)
        started = time.monotonic()
        stopper = subprocess.run([sys.executable, "scripts/serve.py", "--stop"], cwd=ROOT, env=env, text=True,
                                 capture_output=True, timeout=60)
        proc.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    output = log.read_text()
    statuses = sorted(Document.objects.filter(kb=kb).values_list("status", flat=True))
    print(f"\nstopped in {took:.1f} s; documents {statuses}")
    assert f"stopped the server of {port}" in stopper.stdout, stopper.stdout + stopper.stderr
    assert took < 15
    assert "cannot schedule new futures" not in output and "Traceback" not in output, output[-3000:]
    assert set(statuses) <= {DocumentStatus.PENDING, DocumentStatus.READY} and DocumentStatus.PENDING in statuses
    assert not list((var / "run").glob("serve-*.pid"))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
