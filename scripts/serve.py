"""`make run`'s last step: start daphne, and say where the platform is once it really listens.

daphne logs its own start-up; a newcomer reading the terminal wants one line with
the address, printed when a browser opened on it would get a page, not before.
Ctrl-C (or SIGTERM) stops daphne: it exits within seconds, its queued background jobs left pending
for the next start (core/jobs.py, ``stop``).

Its pid is kept in ``$ZHIKU_VAR_DIR/run/serve-<port>.pid`` (default var/) while it runs, so that
``make stop`` (``serve.py --stop``) stops every server ``make run`` started, then the database.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_DIR = Path(os.environ.get("ZHIKU_VAR_DIR", ROOT / "var")) / "run"
STOP_SECONDS = 20  # then SIGKILL: a server stops within seconds (core/jobs.py), this is for one that hangs


def pid_files() -> list[Path]:
    return sorted(RUN_DIR.glob("serve-*.pid"))


def ours(pid: int) -> bool:
    """Whether ``pid`` is a running serve.py (not a recycled pid): its command line names this script."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(part.endswith(b"scripts/serve.py") for part in cmdline)


def stop_all() -> int:
    """SIGTERM every server ``make run`` started (its pid file), SIGKILL one still there after STOP_SECONDS."""
    stopped = 0
    for path in pid_files():
        try:
            pid = int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            path.unlink(missing_ok=True)
            continue
        if ours(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_SECONDS
            while ours(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if ours(pid):
                os.kill(pid, signal.SIGKILL)
            print(f"stopped the server of {path.stem.removeprefix('serve-')} (pid {pid})")
            stopped += 1
        path.unlink(missing_ok=True)
    return stopped


def listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--stop", action="store_true", help="stop every server `make run` started (`make stop`)")
    args = parser.parse_args()
    if args.stop:
        stop_all()
        return 0
    if listening(args.host, args.port):
        print(f"端口 {args.port} 已被占用 / port {args.port} is in use: stop what runs there or run `make run PORT=8001`.",
              file=sys.stderr)
        return 1
    print(f"starting daphne on {args.host}:{args.port} …", flush=True)
    daphne = subprocess.Popen([sys.executable, "-m", "daphne", "-b", args.host, "-p", str(args.port),
                               "config.asgi:application"], cwd=ROOT)
    signal.signal(signal.SIGTERM, lambda *_: daphne.terminate())
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    pid_file = RUN_DIR / f"serve-{args.port}.pid"
    pid_file.write_text(f"{os.getpid()} {daphne.pid}\n")
    try:
        while daphne.poll() is None and not listening(args.host, args.port):
            time.sleep(0.2)
        if daphne.poll() is None:
            base = f"http://{args.host}:{args.port}"
            print(f"\n知库 zhiku 已启动 / is up: {base}/   管理后台 admin: {base}/admin/   API 文档 docs: {base}/api/docs/\n"
                  "按 Ctrl-C 停止 / Ctrl-C stops it.\n", flush=True)
        return daphne.wait()
    except KeyboardInterrupt:
        daphne.terminate()
        return daphne.wait()
    finally:
        pid_file.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
