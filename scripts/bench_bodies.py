"""Print what a large anonymous body costs a real server (issue 45 item 1): how much it reads, how long, how much memory.

Usage: python scripts/bench_bodies.py [--root CHECKOUT] [--port 8765] [--scale 1.0]

Starts daphne serving ``config.asgi`` from ``--root`` (default: this checkout; another commit's worktree to compare,
run with this checkout's venv) on the database its settings name (``DATABASE_URL``, else the embedded server under
``--root``'s var/), waits for its RSS to settle, then sends, with no credentials and as fast as the server reads:

- 900 MiB declared (``Content-Length``) to ``POST /api/kbs/2/documents/`` (multipart/form-data);
- 400 MiB chunked to the same route;
- 300 MiB declared to ``POST /admin/login/``.

Each body goes to a server of its own, freshly started. For each it prints the status, the MiB the client got
into the connection before the server answered and closed it, the seconds, and the growth of the server's process
group RSS (the server and its children, peak while the request ran, over the settled baseline). ``--scale``
multiplies the sizes. Figures only, nothing asserted; they are in docs/api.md, *Request size*.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

MiB = 1024 * 1024
CASES = [("/api/kbs/2/documents/", 900, False), ("/api/kbs/2/documents/", 400, True), ("/admin/login/", 300, False)]


def group_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


def settled(proc: psutil.Process, ceiling_s: float = 180) -> int:
    deadline, last = time.monotonic() + ceiling_s, group_rss(proc)
    while time.monotonic() < deadline:
        time.sleep(2)
        now = group_rss(proc)
        if abs(now - last) < MiB:
            return now
        last = now
    return last


def send(port: int, path: str, size: int, chunked: bool) -> tuple[str, int]:
    """(the status line, bytes sent before the server stopped reading) of one anonymous POST of ``size`` bytes."""
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: multipart/form-data; boundary=x",
            "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"]
    piece, sent, data = b"x" * (256 * 1024), 0, b""
    with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            while sent < size:
                chunk = piece[: min(len(piece), size - sent)]
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                sent += len(chunk)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        try:
            while b"\r\n" not in data and (chunk := sock.recv(65536)):
                data += chunk
        except OSError:
            pass
    return data.split(b"\r\n", 1)[0].decode("latin-1") or "(closed, no answer)", sent


def serve(root: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "WARNING",
           "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost", "ZHIKU_INGEST_MODE": "sync"}
    env.pop("PYTHONPATH", None)
    server = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "config.asgi:application"], cwd=root, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.2)
    send(port, "/api/kbs/", 1024, False)        # the first request's imports
    return server


def measure(proc: psutil.Process, port: int, path: str, size: int, chunked: bool) -> str:
    before = settled(proc)
    peak, done = before, threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, group_rss(proc))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()
    status, sent = send(port, path, size, chunked)
    took = time.monotonic() - started
    time.sleep(1)
    done.set()
    watcher.join()
    return (f"{size // MiB:>4} MiB {'chunked ' if chunked else 'declared'} to {path:<22} {status:<32} "
            f"read {sent / MiB:7.1f} MiB in {took:6.2f} s; RSS {before / MiB:.0f} MiB, peak +{(peak - before) / MiB:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(args.root), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"server from {args.root} at {commit or '?'}; load average {os.getloadavg()[0]:.2f}; a new server for each body")
    for path, mib, chunked in CASES:
        server = serve(args.root, args.port)        # a fresh one: memory a body left behind is not the next one's
        try:
            print(measure(psutil.Process(server.pid), args.port, path, int(mib * args.scale * MiB), chunked), flush=True)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()


if __name__ == "__main__":
    main()
