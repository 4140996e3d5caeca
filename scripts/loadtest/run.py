"""Load-test driver: set up a KB over the REST API, run the locustfile headless, kill workers mid-run, check the end.

Usage: python scripts/loadtest/run.py --host http://127.0.0.1:8000 --users 10 --duration 60
       (``make loadtest HOST=... USERS=... DURATION=...``)

1. Setup, through the API only: an API token (``--token``, or ``--username`` and
   ``--password``, by default the local admin of ``manage.py bootstrap`` with its
   password from ``$ZHIKU_VAR_DIR/admin-password.txt``), a new KB, the policy
   documents of ``devdata/policy-zh`` as Markdown files and version 1 of the
   document that will be replaced during the run; it waits until they are ready.
2. locust runs ``scripts/loadtest/locustfile.py`` headless for ``--duration`` seconds.
3. Meanwhile, when the cluster's pid files exist (``var/cluster/pids``, written by
   ``scripts/cluster.py start``): at 30% of the run web worker ``--kill-web``
   (default web-2) is SIGKILLed and ``scripts/cluster.py restart-one`` replaces it;
   at 50% a larger document is uploaded, and once it is processing the Celery
   worker busiest on the CPU is SIGKILLed (with its pool processes) and replaced.
   Without pid files these steps are skipped, and the report says so.
4. At the end it waits (``--ready-timeout``) for every uploaded document to be
   ready: a document whose worker died is re-queued by the sweeper once its
   heartbeat is ZHIKU_INGEST_STALL_SECONDS old (60 s by default).

Output: a table on stdout and the whole report as JSON (``--out``); the KB and the run's conversations
are deleted at the end unless ``--keep-kb``. Nothing is asserted; ``checks`` in the JSON say which expectations held.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import psutil
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from marker import MARKER_CHUNKING, marker_document  # noqa: E402 - after the sys.path line; what the locustfile uploads

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
MARKER_SOURCE = "lt-marker.md"
MARKER_QUERY = "产品版本标记的升级注意事项"


# --- setup through the REST API ----------------------------------------------------------

def api_token(session: requests.Session, host: str, args) -> str:
    if args.token:
        return args.token
    password = args.password
    if not password:
        var_dir = Path(os.environ.get("ZHIKU_VAR_DIR", ROOT / "var"))
        password = (var_dir / "admin-password.txt").read_text().strip()
    response = session.post(f"{host}/api/auth/token/",
                            json={"username": args.username, "password": password, "name": "loadtest"}, timeout=30)
    response.raise_for_status()
    return response.json()["token"]


def policy_documents(limit: int) -> list[tuple[str, bytes]]:
    """devdata/policy-zh's passages regrouped into their documents (title before ' › '), as Markdown files."""
    documents: dict[str, list[str]] = defaultdict(list)
    for line in (ROOT / "devdata" / "policy-zh" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        passage = json.loads(line)
        title, _, section = passage["title"].partition(" › ")
        documents[title].append(f"## {section or title}\n\n{passage['text']}\n")
    files = []
    for i, (title, sections) in enumerate(list(documents.items())[:limit], 1):
        files.append((f"lt-policy-{i}.md", f"# {title}\n\n".encode() + "\n".join(sections).encode()))
    return files


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def upload(session, host: str, kb_id: int, files: list[tuple[str, bytes]], form: dict | None = None) -> list[int]:
    response = session.post(f"{host}/api/kbs/{kb_id}/documents/", timeout=300, data=form or {},
                            files=[("files", (name, body, "text/markdown")) for name, body in files])
    response.raise_for_status()
    return [d["id"] for d in response.json()["documents"]]


def statuses(session, host: str, kb_id: int, ids: list[int]) -> dict[int, str]:
    out = {}
    for document_id in ids:
        response = session.get(f"{host}/api/kbs/{kb_id}/documents/{document_id}/", timeout=30)
        out[document_id] = response.json()["status"] if response.status_code == 200 else f"http {response.status_code}"
    return out


def wait_ready(session, host: str, kb_id: int, ids: list[int], timeout: float) -> dict[int, str]:
    """Poll until every document is ready or failed, or ``timeout`` passes; the last statuses."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            now = statuses(session, host, kb_id, ids)
        except requests.RequestException:
            now = {i: "unreachable" for i in ids}
        if all(s in ("ready", "failed") for s in now.values()) or time.monotonic() > deadline:
            return now
        time.sleep(2)


def set_up(session, host: str, args) -> dict:
    session.headers["Authorization"] = f"Token {api_token(session, host, args)}"
    name = f"负载测试 loadtest {datetime.now(UTC):%Y-%m-%d %H:%M:%S}"
    response = session.post(f"{host}/api/kbs/", json={"name": name}, timeout=30)
    response.raise_for_status()
    kb_id = response.json()["id"]
    files = policy_documents(args.docs)
    started = time.monotonic()
    ids = upload(session, host, kb_id, files) + upload(session, host, kb_id, [(MARKER_SOURCE, marker_document(1))], MARKER_CHUNKING)
    ready = wait_ready(session, host, kb_id, ids, timeout=900)
    print(f"setup: KB {kb_id}, {len(ids)} documents, {sum(s == 'ready' for s in ready.values())} ready "
          f"in {time.monotonic() - started:.0f} s", flush=True)
    manual = jsonl(ROOT / "devdata" / "manual-zh" / "corpus.jsonl")
    return {
        "token": session.headers["Authorization"].split()[1], "kb_id": kb_id,
        "queries": [q["text"] for q in jsonl(ROOT / "devdata" / "policy-zh" / "queries.jsonl")],
        "passages": [p["text"][:400] for p in manual],
        "marker_source": MARKER_SOURCE, "marker_query": MARKER_QUERY, "marker_version": 1,
    }


def delete_conversations(session, host: str, kb_id: int) -> int:
    """Delete the run's chats (the account's conversations that searched the load test's KB), so that its
    conversation list is as it was before the run rather than hundreds of test questions long."""
    url, ours = f"{host}/api/conversations/", []
    while url:
        page = session.get(url, timeout=30)
        page.raise_for_status()
        body = page.json()
        ours += [c["id"] for c in body["results"] if kb_id in (c.get("kb_ids") or [])]
        url = body.get("next")
    for conversation_id in ours:
        session.delete(f"{host}/api/conversations/{conversation_id}/", timeout=30)
    return len(ours)


# --- kills (cluster mode only) -----------------------------------------------------------

def descendants(pid: int) -> list[int]:
    """``pid``'s child processes, recursively."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def read_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def kill_tree(pid: int) -> list[int]:
    victims = [pid, *descendants(pid)]
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return victims


def restart(args, name: str) -> str:
    script = args.cluster_script
    if not script.exists():
        return f"not replaced: {script} is absent"
    done = subprocess.run([sys.executable, str(script), "restart-one", name], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    return "replaced" if done.returncode == 0 else f"restart-one failed ({done.returncode}): {done.stderr.strip()[-300:]}"


def kill_web(args, report: dict) -> None:
    pid = read_pid(args.pids / f"{args.kill_web}.pid")
    if pid is None:
        report["web_kill"] = {"skipped": f"no live pid in {args.pids / (args.kill_web + '.pid')} (single-process mode)"}
        return
    victims = kill_tree(pid)
    at = time.time()
    time.sleep(1)
    report["web_kill"] = {"worker": args.kill_web, "pids": victims, "at": at, "restart": restart(args, args.kill_web)}


def kill_ingestion_worker(session, host: str, kb_id: int, args, report: dict) -> None:
    workers = {path.stem: pid for path in sorted(args.pids.glob("worker-*.pid")) if (pid := read_pid(path)) is not None}
    if not workers:
        report["worker_kill"] = {"skipped": f"no live worker pid files in {args.pids} (single-process mode)"}
        return
    manual = jsonl(ROOT / "devdata" / "manual-zh" / "corpus.jsonl")[:60]
    body = "# 负载测试 长文档\n\n" + "\n".join(f"## {p['title']}\n\n{p['text']}\n" for p in manual)
    document_id = upload(session, host, kb_id, [(f"lt-kill-{int(time.time())}.md", body.encode())])[0]
    report["worker_kill"] = {"document": document_id}
    deadline = time.monotonic() + 60
    while statuses(session, host, kb_id, [document_id])[document_id] != "processing":
        if time.monotonic() > deadline:
            report["worker_kill"]["skipped"] = "the document never reached processing within 60 s"
            return
        time.sleep(0.2)
    # The worker ingesting it is the one whose processes burn CPU: embedding is CPU-bound.
    before = {name: sum(cpu_ticks(p) for p in [pid, *descendants(pid)]) for name, pid in workers.items()}
    time.sleep(1.0)
    busy = {name: sum(cpu_ticks(p) for p in [pid, *descendants(pid)]) - before[name] for name, pid in workers.items()}
    name = max(busy, key=busy.get)
    victims = kill_tree(workers[name])
    report["worker_kill"].update({"worker": name, "pids": victims, "at": time.time(), "cpu_ticks_per_s": busy,
                                  "restart": restart(args, name)})


def run_kills(session, host: str, kb_id: int, args, report: dict) -> None:
    time.sleep(args.duration * 0.3)
    try:
        kill_web(args, report)
    except Exception as exc:  # noqa: BLE001 - a failed kill is written into the report; the load run goes on
        report["web_kill"] = {"error": repr(exc)}
    time.sleep(max(0.0, args.duration * 0.2))
    try:
        kill_ingestion_worker(session, host, kb_id, args, report)
    except Exception as exc:  # noqa: BLE001 - a failed kill is written into the report; the load run goes on
        report["worker_kill"] = {**report.get("worker_kill", {}), "error": repr(exc)}


# --- report -------------------------------------------------------------------------------

def checks(summary: dict, documents: dict[int, str], report: dict) -> dict:
    c = summary["counts"]
    started, finished = c.get("chats_started", 0), c.get("chats_finished", 0)
    interrupted, errored = c.get("chats_interrupted", 0), c.get("chats_errored", 0)
    web_killed = "pids" in report.get("web_kill", {})
    return {
        "chats_started": started, "chats_finished": finished, "chats_interrupted": interrupted, "chats_errored": errored,
        # Every chat that started either finished or was cut off on the killed web worker.
        "chats_accounted_for": started == finished + (interrupted if web_killed else 0),
        "docs_uploaded": len(documents), "docs_ready": sum(s == "ready" for s in documents.values()),
        "docs_not_ready": {str(i): s for i, s in documents.items() if s != "ready"},
        "version_mix_violations": c.get("version_mix_violations", 0),
        "keyword_path_missing": c.get("keyword_path_missing", 0),
        "keyword_hits_not_served": c.get("keyword_hits_not_served", 0),
        "marker_searches": c.get("marker_searches", 0),
        "marker_versions_uploaded": c.get("marker_versions_uploaded", 0),
    }


def print_table(report: dict) -> None:
    summary = report["locust"]
    print(f"\n{'request kind':<30} {'requests':>8} {'failures':>8} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8}")
    for name, e in [*summary["requests"].items(), ("TOTAL", summary["total"])]:
        print(f"{name:<30} {e['requests']:>8} {e['failures']:>8} {e['rps']:>7} {e['p50_ms']:>8} {e['p95_ms']:>8}")
    c = report["checks"]
    print(f"\nchats started {c['chats_started']}, finished {c['chats_finished']}, interrupted {c['chats_interrupted']}, "
          f"errored {c['chats_errored']} (accounted for: {c['chats_accounted_for']})")
    print(f"documents uploaded {c['docs_uploaded']}, ready {c['docs_ready']}"
          + (f", not ready: {c['docs_not_ready']}" if c["docs_not_ready"] else ""))
    print(f"replaced document: {c['marker_versions_uploaded']} versions uploaded, {c['marker_searches']} searches, "
          f"{c['version_mix_violations']} mixed versions, {c['keyword_path_missing']} without the keyword path, "
          f"{c['keyword_hits_not_served']} whose keyword hits reached no result")
    for step in ("web_kill", "worker_kill"):
        print(f"{step}: {json.dumps(report.get(step, {}), ensure_ascii=False)}")
    for violation in summary.get("violations", []):
        print(f"violation: {violation}")
    for error in summary["errors"]:
        print(f"error: {error['occurrences']} × {error['method']} {error['name']}: {error['error'][:120]}")


def main() -> int:
    # long because: a script's steps in order: arguments, server and data set-up, the locust run, the report
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="http://127.0.0.1:8000")
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--spawn-rate", type=float, default=5)
    parser.add_argument("--duration", type=int, default=60, help="seconds")
    parser.add_argument("--docs", type=int, default=8, help="policy documents in the KB (at most 8)")
    parser.add_argument("--token")
    parser.add_argument("--username", default="admin")
    parser.add_argument("--password")
    parser.add_argument("--pids", type=Path, default=ROOT / "var" / "cluster" / "pids")
    parser.add_argument("--kill-web", default="web-2")
    parser.add_argument("--cluster-script", type=Path, default=ROOT / "scripts" / "cluster.py",
                        help="what replaces a killed worker: <script> restart-one <name>")
    parser.add_argument("--no-kills", action="store_true")
    parser.add_argument("--ready-timeout", type=float, default=240, help="seconds to wait for uploads after the run")
    parser.add_argument("--keep-kb", action="store_true",
                        help="keep the load test's KB and conversations (default: delete them at the end)")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "loadtest" / "report.json")
    args = parser.parse_args()
    host = args.host.rstrip("/")
    args.out.parent.mkdir(parents=True, exist_ok=True)

    session = requests.Session()
    setup = set_up(session, host, args)
    setup_path = args.out.with_name("setup.json")
    summary_path = args.out.with_name("locust-summary.json")
    setup_path.write_text(json.dumps(setup, ensure_ascii=False))
    summary_path.unlink(missing_ok=True)

    # One search before the clock starts: the first loads the server's models and builds the KB's keyword index,
    # which a short run would otherwise spend its seconds on (and a loaded machine, all of them).
    started = time.perf_counter()
    session.post(f"{host}/api/search/", json={"query": setup["queries"][0], "kb_ids": [setup["kb_id"]]}, timeout=300)
    report: dict = {"host": host, "users": args.users, "duration_s": args.duration, "kb_id": setup["kb_id"],
                    "warm_up_s": round(time.perf_counter() - started, 1), "started_at": datetime.now(UTC).isoformat()}
    if args.no_kills:
        report["web_kill"] = report["worker_kill"] = {"skipped": "--no-kills"}
        killer = None
    else:
        killer = threading.Thread(target=run_kills, args=(session, host, setup["kb_id"], args, report), daemon=True)
    env = {**os.environ, "ZHIKU_LT_SETUP": str(setup_path), "ZHIKU_LT_SUMMARY": str(summary_path)}
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", host,
               "-u", str(args.users), "-r", str(args.spawn_rate), "-t", f"{args.duration}s", "--stop-timeout", "30",
               "--only-summary", "--loglevel", "WARNING"]
    with open(args.out.with_name("locust.log"), "w") as log:
        locust = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        if killer is not None:
            killer.start()
        locust.wait()
    if killer is not None:
        killer.join(timeout=120)
    if not summary_path.exists():
        print(f"locust wrote no summary; see {args.out.with_name('locust.log')}", file=sys.stderr)
        return 1
    summary = json.loads(summary_path.read_text())
    ids = list(summary["uploaded_document_ids"])
    if "document" in report.get("worker_kill", {}):
        ids.append(report["worker_kill"]["document"])
    documents = wait_ready(session, host, setup["kb_id"], ids, timeout=args.ready_timeout)
    report.update({"locust": summary, "checks": checks(summary, documents, report)})
    if not args.keep_kb:
        report["conversations_deleted"] = delete_conversations(session, host, setup["kb_id"])
        deleted = session.delete(f"{host}/api/kbs/{setup['kb_id']}/", timeout=120)
        report["kb_deleted"] = deleted.status_code == 204
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2))
    print_table(report)
    print(f"\nreport: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
