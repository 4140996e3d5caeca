"""`make run`'s last step: start daphne, and say where the platform is once it really listens.

daphne logs its own start-up; a newcomer reading the terminal wants one line with
the address, printed when a browser opened on it would get a page, not before.
Ctrl-C (or SIGTERM) stops daphne.
"""
from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    args = parser.parse_args()
    if listening(args.host, args.port):
        print(f"端口 {args.port} 已被占用 / port {args.port} is in use: stop what runs there or run `make run PORT=8001`.",
              file=sys.stderr)
        return 1
    print(f"starting daphne on {args.host}:{args.port} …", flush=True)
    daphne = subprocess.Popen([sys.executable, "-m", "daphne", "-b", args.host, "-p", str(args.port),
                               "config.asgi:application"], cwd=ROOT)
    signal.signal(signal.SIGTERM, lambda *_: daphne.terminate())
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


if __name__ == "__main__":
    sys.exit(main())
