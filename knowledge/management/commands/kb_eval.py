"""Evaluate retrieval on a labelled corpus: `manage.py kb_eval --corpus C --queries Q [--mode M] [--top-k N] [--kb NAME] [--json]`."""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from knowledge.models import Document, DocumentStatus, KnowledgeBase
from knowledge.retrieval.pipeline import MODES
from knowledge.services.calibration import recalibrate_kb
from knowledge.services.corpus import corpus_ingest
from knowledge.services.evaluation import LabelledQuery, evaluate
from knowledge.services.kbs import kb_create

from .bench_search import read_jsonl


def read_corpus(path: Path) -> list[dict]:
    if not path.is_file():
        raise CommandError(f"No file at {path}.")
    return read_jsonl(path)


def drop_plan(queries: list[dict], n: int) -> tuple[set[str], set[str]]:
    """Drop passages until about ``n`` queries have lost every relevant passage; return (those queries, the passages).

    Queries are taken in a fixed hashed order; each one's passages are dropped,
    and every query whose relevant passages are then all gone is unanswerable
    (a passage usually answers several questions, so they go together).
    """
    answerable = [q for q in queries if q.get("relevant")]
    ordered = sorted(answerable, key=lambda q: hashlib.sha256(str(q["id"]).encode()).hexdigest())
    passages: set[str] = set()
    lost: set[str] = set()
    for q in ordered:
        if len(lost) >= n:
            break
        passages |= {str(p) for p in q["relevant"]}
        lost = {str(x["id"]) for x in answerable if {str(p) for p in x["relevant"]} <= passages}
    return lost, passages


class Command(BaseCommand):
    help = "Load a corpus into a KB (or reuse it) and measure retrieval: recall, MRR, nDCG, not-found rates, latency."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help='JSONL of {"id","title","text"}; one document each')
        parser.add_argument("--queries", required=True, help='JSONL of {"id","text","relevant":[ids]}')
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument("--top-k", type=int, default=10)
        parser.add_argument("--kb", help="KB name: reused if it exists (loaded before), else created and loaded")
        parser.add_argument("--limit", type=int, default=0, help="only the first N queries")
        parser.add_argument("--drop-relevant", type=int, default=0,
                            help="make N queries unanswerable by leaving their passages out of the corpus (not-found test)")
        parser.add_argument("--owner", help="owner of a new KB (default: a 'bench' user)")
        parser.add_argument("--with-kbs", nargs="+", default=[],
                            help="names of other KBs (same owner, loaded before) searched together with this one")
        parser.add_argument("--self-calibrate", action="store_true",
                            help="recalibrate the KB's judge from its own content (or labelled questions) before measuring; "
                                 "without it a KB this command creates keeps the shipped judge")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--per-query", action="store_true", help="include per-query outcomes in --json output")

    def handle(self, *args, **opts):
        corpus = read_corpus(Path(opts["corpus"]))
        queries = read_corpus(Path(opts["queries"]))
        dropped_queries, dropped_passages = drop_plan(queries, opts["drop_relevant"]) if opts["drop_relevant"] else (set(), set())
        corpus = [p for p in corpus if str(p["id"]) not in dropped_passages]
        if opts["limit"]:
            queries = queries[: opts["limit"]]
        User = get_user_model()
        if opts["owner"]:
            user = User.objects.filter(username=opts["owner"]).first()
            if user is None:
                raise CommandError(f"No user {opts['owner']!r}.")
        else:
            user, _ = User.objects.get_or_create(username="bench", defaults={"is_active": False})
        name = opts["kb"] or f"eval-{Path(opts['corpus']).parent.name}-{hashlib.sha256(json.dumps(sorted(dropped_passages)).encode()).hexdigest()[:8]}-{int(time.time())}"
        kb = KnowledgeBase.objects.filter(name=name, owner=user).first()
        if kb is None:
            kb = kb_create(owner=user, name=name)
        self._load(kb, corpus, user, quiet=opts["json"])
        if opts["self_calibrate"]:
            row = recalibrate_kb(kb.pk)
            kb.refresh_from_db()
            if not opts["json"]:
                self.stdout.write(f"calibrated ({row.status}, {row.source}): slope {row.slope:.3f} offset {row.offset:.3f}")
        labelled = [
            LabelledQuery(id=str(q["id"]), text=q["text"], relevant=[] if str(q["id"]) in dropped_queries else [str(r) for r in q.get("relevant", [])])
            for q in queries
        ]
        started = time.perf_counter()
        others = []
        for other in opts["with_kbs"]:
            found = KnowledgeBase.objects.filter(name=other, owner=user).first()
            if found is None:
                raise CommandError(f"No KB {other!r} of {user.username}: load it first with kb_eval --kb {other}.")
            others.append(found.pk)
        metrics = evaluate(user=user, kb_ids=[kb.pk, *others], queries=labelled, mode=opts["mode"], top_k=opts["top_k"],
                           progress=None if opts["json"] else self._progress(len(labelled)), labels_kb_id=kb.pk)
        metrics["seconds"] = round(time.perf_counter() - started, 1)
        metrics["kb"] = {"id": kb.pk, "name": kb.name, "chunks": kb.chunks.count(), "embedding_model": kb.embedding_model,
                         "calibration": [kb.calibration_slope, kb.calibration_offset], "threshold": kb.score_threshold}
        if not opts["per_query"]:
            metrics.pop("per_query")
        if opts["json"]:
            self.stdout.write(json.dumps(metrics, ensure_ascii=False))
            return
        self.stdout.write("")
        self.stdout.write(f"KB {kb.name!r} (id {kb.pk}, {metrics['kb']['chunks']} chunks, {kb.embedding_model}); mode {opts['mode']}; "
                          f"{metrics['answerable']} answerable + {metrics['unanswerable']} unanswerable queries")
        for key in ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10", "abstain_rate", "false_abstain_rate"):
            value = metrics[key]
            self.stdout.write(f"  {key:<20} {'—' if value is None else f'{value:.4f}'}")
        self.stdout.write("  latency ms (p50 / p95): " + ", ".join(
            f"{k} {v['p50']}/{v['p95']}" for k, v in metrics["latency_ms"].items()))

    def _progress(self, total: int):
        def show(n: int) -> None:
            if n % 100 == 0 or n == total:
                sys.stderr.write(f"\r  {n}/{total} queries")
        return show

    def _load(self, kb: KnowledgeBase, corpus: list[dict], user, *, quiet: bool) -> None:
        """Ingest passages not yet in the KB (by external id), in this process."""
        have = set(Document.objects.filter(kb=kb, status=DocumentStatus.READY).values_list("external_id", flat=True))
        todo = [p for p in corpus if str(p["id"]) not in have]
        if not todo:
            return
        settings.ZHIKU_INGEST_MODE = "sync"
        # A bulk load is one change: no refit after every passage (--self-calibrate fits once, after the load).
        settings.ZHIKU_AUTO_CALIBRATE = False
        started = time.perf_counter()

        def progress(n: int) -> None:
            if not quiet:
                sys.stderr.write(f"\r  loaded {n}/{len(todo)} passages ({time.perf_counter() - started:.0f} s)")

        corpus_ingest(kb=kb, passages=todo, user=user, progress=progress)
        if not quiet:
            sys.stderr.write("\n")
