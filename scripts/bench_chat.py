"""Chat benchmark: time to first token and total time over the websocket, then N concurrent chats on one daphne.

    .venv/bin/python scripts/bench_chat.py [--concurrency 100 | --levels 25,50,100] [--sequential 20]

It migrates the local database, makes a ``bench-chat`` user with a KB built
from docs/ and README.md (the demo KB's content), starts daphne on a free
loopback port in extractive mode (no LLM: ZHIKU_LLM_* are removed from its
environment) and drives it with real websocket clients (the ``websockets``
package), sending an Origin header and ``?token=``. Times are measured by the
client: from sending ``ask`` to the first ``token`` event and to ``finish``.
The load phase opens ``--concurrency`` connections at once, each asking one
distinct question; a chat that sends no ``finish`` within ``--timeout`` counts
as lost. The bench user's conversations are deleted at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("ZHIKU_INGEST_MODE", "sync")

QUESTIONS = [
    "知库是什么？", "如何在本机启动知库？", "如何运行测试？", "管理员账号和密码在哪里？", "权限是怎么划分的？",
    "检索是怎么工作的？", "支持哪些向量模型？", "如何通过 API 上传文档？", "支持哪些文件格式？", "上传之后会发生什么？",
    "重新上传同名文件会怎样？", "切片规则是什么？", "文件夹同步怎么用？", "两条流水线分别是什么？", "代码在哪里？",
    "查看者和编辑者有什么区别？", "找不到答案时会怎样？", "BM25 索引存在哪里？", "如何调整融合权重？", "什么是命中测试？",
    "PDF 怎么解析？", "向量维度是多少？", "如何获取 API 令牌？", "Redis 是必须的吗？", "如何设置未找到时的回答？",
]
PREFIXES = ["", "请问", "我想知道：", "麻烦说明一下，"]


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def setup_kb() -> tuple[int, str]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from accounts.tokens import token_issue
    from chat.models import Conversation
    from knowledge.management.commands._util import wait_for_documents
    from knowledge.models import KnowledgeBase
    from knowledge.services.kbs import kb_create
    from knowledge.services.sync import collect_files, kb_sync_files

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-chat")
    kb = KnowledgeBase.objects.filter(owner=user, name="bench chat KB").first() or kb_create(owner=user, name="bench chat KB")
    report = kb_sync_files(kb=kb, files=collect_files(ROOT / "docs", extra=[ROOT / "README.md"]), user=user)
    wait_for_documents(report.document_ids)
    Conversation.objects.filter(user=user).delete()
    return kb.pk, token_issue(user=user, name="bench_chat", replace_named=True)[1]


def cleanup() -> None:
    from django.contrib.auth import get_user_model

    from chat.models import Conversation

    Conversation.objects.filter(user__in=get_user_model().objects.filter(username="bench-chat")).delete()


def start_daphne(port: int, log_path: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZHIKU_LLM_")}
    env["LOG_LEVEL"] = "WARNING"
    with open(log_path, "wb") as log:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("daphne did not start; see " + str(log_path))


async def one_chat(url: str, origin: str, kb_id: int, question: str, timeout: float) -> dict:
    """Open a socket, ask, read to the end; client-side timings in ms."""
    from websockets.asyncio.client import connect

    out: dict = {"question": question, "ok": False, "tokens": 0}
    t0 = time.perf_counter()
    try:
        async with connect(url, origin=origin, open_timeout=timeout, max_size=None) as ws:
            out["connect_ms"] = (time.perf_counter() - t0) * 1000
            t_ask = time.perf_counter()
            await ws.send(json.dumps({"type": "ask", "conversation": None, "kb_ids": [kb_id], "question": question}))
            async with asyncio.timeout(timeout):
                async for raw in ws:
                    event = json.loads(raw)
                    if event["type"] == "token":
                        out["tokens"] += 1
                        out.setdefault("ttft_ms", (time.perf_counter() - t_ask) * 1000)
                    elif event["type"] == "finish":
                        out.update(ok=True, total_ms=(time.perf_counter() - t_ask) * 1000, hit=event["hit"],
                                   server=event["timings"])
                        return out
                    elif event["type"] == "error":
                        out["error"] = event["code"]
                        return out
    except (TimeoutError, OSError, Exception) as exc:  # noqa: BLE001 - counted as lost
        out["error"] = f"lost: {type(exc).__name__}"
    return out


def _cpu_of(pid: int, *, children: bool) -> float:
    """CPU seconds of ``pid`` from /proc (user + system; with ``children``, also its reaped children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def server_cpu(daphne_pid: int) -> float:
    """The server side's CPU seconds so far: daphne, and the embedded PostgreSQL (its postmaster, its live
    backends, and those that ended: the postmaster's reaped children)."""
    total = _cpu_of(daphne_pid, children=True)
    pidfile = ROOT / "var" / "pgdata" / "postmaster.pid"
    if not os.environ.get("DATABASE_URL") and pidfile.exists():
        postmaster = int(pidfile.read_text().split()[0])
        total += _cpu_of(postmaster, children=True) + sum(_cpu_of(c, children=False) for c in _children(postmaster))
    return total


def summary(name: str, results: list[dict], wall_s: float | None = None, cpu_s: float | None = None) -> None:
    ok = [r for r in results if r["ok"]]
    ttft = [r["ttft_ms"] for r in ok if "ttft_ms" in r]
    total = [r["total_ms"] for r in ok]
    retrieval = [r["server"].get("retrieval_ms", 0) for r in ok]
    print(f"\n== {name}: {len(ok)}/{len(results)} finished, {len(results) - len(ok)} failed or lost, "
          f"{sum(1 for r in ok if r.get('hit'))} hits")
    errors = {}
    for r in results:
        if not r["ok"]:
            errors[r.get("error", "?")] = errors.get(r.get("error", "?"), 0) + 1
    if errors:
        print("   errors:", errors)
    print(f"   time to first token  p50 {pct(ttft, 50):7.1f} ms   p95 {pct(ttft, 95):7.1f} ms   "
          f"max {max(ttft, default=float('nan')):7.1f} ms")
    print(f"   total                p50 {pct(total, 50):7.1f} ms   p95 {pct(total, 95):7.1f} ms   "
          f"max {max(total, default=float('nan')):7.1f} ms")
    print(f"   server retrieval_ms  p50 {pct(retrieval, 50):7.1f} ms   p95 {pct(retrieval, 95):7.1f} ms")
    if wall_s is not None:
        print(f"   wall {wall_s:.2f} s, {len(ok) / wall_s:.1f} chats/s")
    if cpu_s is not None and ok:
        print(f"   cpu per turn: {cpu_s / len(ok) * 1000:.1f} ms (daphne + PostgreSQL, {cpu_s:.2f} s for {len(ok)} chats)")


async def run(args, kb_id: int, token: str, port: int, daphne_pid: int) -> None:
    url = f"ws://127.0.0.1:{port}/ws/chat/?token={token}"
    origin = f"http://127.0.0.1:{port}"
    questions = [p + q for p in PREFIXES for q in QUESTIONS]
    # Warm-up: model loads (embedder, jieba) and the BM25 index happen on first use.
    await one_chat(url, origin, kb_id, "知库是什么", args.timeout)

    results = []
    cpu = server_cpu(daphne_pid)
    for q in questions[: args.sequential]:
        results.append(await one_chat(url, origin, kb_id, q, args.timeout))
    summary(f"sequential, one chat at a time ({args.sequential})", results, cpu_s=server_cpu(daphne_pid) - cpu)

    for level in args.levels or [args.concurrency]:
        started, cpu = time.perf_counter(), server_cpu(daphne_pid)
        chosen = [questions[i % len(questions)] for i in range(level)]
        results = await asyncio.gather(*(one_chat(url, origin, kb_id, q, args.timeout) for q in chosen))
        summary(f"load: {level} concurrent websocket chats, one daphne", results, time.perf_counter() - started,
                cpu_s=server_cpu(daphne_pid) - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--sequential", type=int, default=20)
    parser.add_argument("--levels", type=lambda v: [int(x) for x in v.split(",") if x.strip()], default=None,
                        help="concurrency levels run one after another, e.g. 25,50,100 (instead of --concurrency)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a chat counts as lost")
    args = parser.parse_args()

    kb_id, token = setup_kb()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from django.conf import settings

    log_path = Path(settings.VAR_DIR) / "bench_chat_daphne.log"
    proc = start_daphne(port, log_path)
    try:
        print(f"daphne on 127.0.0.1:{port} (log {log_path}); KB {kb_id} from docs/ + README.md; extractive mode; "
              f"{os.cpu_count()} CPUs")
        asyncio.run(run(args, kb_id, token, port, proc.pid))
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        cleanup()


if __name__ == "__main__":
    main()
