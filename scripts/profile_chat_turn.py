"""Where a chat turn's CPU goes: N extractive turns in this process under cProfile, by stage.

    .venv/bin/python scripts/profile_chat_turn.py [--turns 50] [--kb-id ID] [--stats var/chat_turn.prof]

Without ``--kb-id`` it uses ``scripts/bench_chat.py``'s KB (docs/ and README.md, the demo KB's content). Each turn
is what the websocket consumer runs (``chat.services.turn_prepare`` then ``turn_stream`` to its ``finish``), with
no LLM, one KB and no history, asked one after another after a warm-up turn (models, jieba, the BM25 index). It
prints the process's CPU per turn (``time.process_time``: this process only, not PostgreSQL's) and, per stage,
the cumulative CPU seconds cProfile saw in the functions that stage runs, per turn; the whole profile is written
to ``--stats`` for ``python -m pstats``.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("ZHIKU_INGEST_MODE", "sync")
for name in [k for k in os.environ if k.startswith("ZHIKU_LLM_")]:
    del os.environ[name]  # extractive: the figures are the platform's own work

STAGES = [
    # (stage, module path fragment, function name): the largest cumulative time among the matching functions.
    ("turn_start (checks, 3 writes)", "chat/services.py", "turn_start"),
    ("  access check", "knowledge/selectors.py", "kbs_get_for_user"),
    ("answer_config", "chat/services.py", "answer_config"),
    ("search (all of it)", "knowledge/services/search.py", "search"),
    ("  retriever", "knowledge/retrieval/pipeline.py", "search"),
    ("    query embedding", "knowledge/retrieval/recall.py", "embed"),
    ("      the model", "knowledge/embeddings.py", "embed_query"),
    ("    recall (vector + keyword)", "knowledge/retrieval/recall.py", "retrieve"),
    ("    load rows", "knowledge/retrieval/recall.py", "load"),
    ("    rerank", "knowledge/retrieval/rerank.py", "rerank_pool"),
    ("    judge", "knowledge/retrieval/judging.py", "judge_candidates"),
    ("    reader", "knowledge/retrieval/reading.py", "read"),
    ("answer_plan", "chat/answering.py", "answer_plan"),
    ("  extractive answer", "chat/extractive/answer.py", "extractive_answer"),
    ("turn_settle (1 transaction)", "chat/services.py", "turn_settle"),
]


async def _turn(user, kb_id: int, question: str) -> dict:
    from chat.services import turn_prepare, turn_stream

    turn = await turn_prepare(user=user, conversation_id=None, kb_ids=[kb_id], question=question)
    last: dict = {}
    async for event in turn_stream(turn):
        last = event
    if last.get("type") != "finish":
        raise SystemExit(f"the turn ended with {last}")
    return last


def _stage_seconds(stats: pstats.Stats, fragment: str, function: str) -> float | None:
    best = None
    for (filename, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if name == function and filename.replace(os.sep, "/").endswith(fragment):
            best = max(best or 0.0, cumulative)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=45, help="per run (two runs: at most 49 each, 99 questions)")
    parser.add_argument("--kb-id", type=int, default=None)
    parser.add_argument("--stats", default=str(ROOT / "var" / "chat_turn.prof"))
    args = parser.parse_args()

    from bench_chat import PREFIXES, QUESTIONS, setup_kb

    kb_id, _ = setup_kb() if args.kb_id is None else (args.kb_id, "")
    from django.contrib.auth import get_user_model

    from chat.models import Conversation
    from knowledge.models import KnowledgeBase

    user = KnowledgeBase.objects.get(pk=kb_id).owner if args.kb_id else get_user_model().objects.get(username="bench-chat")
    questions = [p + q for p in PREFIXES for q in QUESTIONS]
    first = Conversation.objects.order_by("-pk").values_list("pk", flat=True).first() or 0

    async def turns(n: int, start: int) -> None:
        for i in range(start, start + n):
            await _turn(user, kb_id, questions[i % len(questions)])

    # Each run asks questions not asked before in this process (an asked one's query embedding is cached).
    asyncio.run(turns(1, len(questions) - 1))  # warm-up: models, jieba, the BM25 index
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(turns(args.turns, 0))  # as served: the searches and writes on executor threads
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall

    # cProfile sees one thread: for the profile, what runs on executor threads runs inline (the same work).
    import chat.services

    def inline(func):
        async def call(*a, **kw):
            return func(*a, **kw)
        return call

    chat.services.in_thread = inline  # type: ignore[assignment]
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the ORM inside the event loop: this profile only
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(turns(args.turns, args.turns))
    profiler.disable()
    Conversation.objects.filter(user=user, pk__gt=first).delete()

    Path(args.stats).parent.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(args.stats)
    stats = pstats.Stats(profiler)
    n = args.turns
    print(f"{n} turns, KB {kb_id}: cpu per turn {cpu / n * 1000:.1f} ms (this process, unprofiled), "
          f"wall per turn {wall / n * 1000:.1f} ms; load average {os.getloadavg()[0]:.2f}")
    print("per turn, cumulative as profiled (stages overlap: indented ones are inside the one above):")
    for label, fragment, function in STAGES:
        seconds = _stage_seconds(stats, fragment, function)
        shown = "—" if seconds is None else f"{seconds / n * 1000:7.1f} ms"
        print(f"  {label:34s} {shown}")
    print(f"profile: {args.stats} (python -m pstats)")


if __name__ == "__main__":
    main()
