"""Issue 9: `make run` talks. scripts/serve.py says where the platform is only once it listens, and
reports a port in use instead of failing obscurely."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.browser import ROOT, free_port, test_database_url

pytestmark = pytest.mark.django_db(transaction=True)


def serve(port: int, settings) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": test_database_url(), "DJANGO_SECRET_KEY": settings.SECRET_KEY,
           "ZHIKU_INGEST_MODE": "sync", "LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1"}
    env.pop("REDIS_URL", None)
    return subprocess.Popen([sys.executable, "scripts/serve.py", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_address_is_printed_once_the_server_listens(settings):
    port = free_port()
    proc = serve(port, settings)
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


def test_a_port_in_use_is_reported(settings):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = serve(taken.getsockname()[1], settings)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "is in use" in out
