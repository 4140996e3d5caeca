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
