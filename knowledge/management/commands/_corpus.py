"""A labelled corpus as the evaluation commands use it (kb_eval, chat_eval): read it, drop passages, load it into a KB."""
from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from knowledge.models import Document, DocumentStatus, KnowledgeBase
from knowledge.services.corpus import corpus_ingest
from knowledge.services.kbs import kb_create

from ._util import named_user
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


@dataclass
class EvalSet:
    """The KB a labelled corpus is loaded into, its owner, and the queries to ask (dropped ones made unanswerable)."""

    kb: KnowledgeBase
    user: object
    queries: list[dict]
    dropped: set[str] = field(default_factory=set)
    """Ids of the queries whose passages were left out: unanswerable whatever their labels say."""

    def relevant(self, query: dict) -> list[str]:
        return [] if str(query["id"]) in self.dropped else [str(r) for r in query.get("relevant", [])]


def eval_owner(username: str | None):
    """The named user, or an inactive 'bench' user that owns the evaluation KBs."""
    if username:
        return named_user(username)
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_active": False})
    return user


def stderr_progress(total: int, *, every: int, noun: str):
    """A progress callback for the evaluation commands: ``n/total noun`` on stderr every ``every`` items."""
    def show(n: int) -> None:
        if n % every == 0 or n == total:
            sys.stderr.write(f"\r  {n}/{total} {noun}")
    return show


def eval_set(opts: dict, *, quiet: bool) -> EvalSet:
    """Read ``--corpus``/``--queries``, drop ``--drop-relevant`` passages, load the rest into ``--kb`` (reused if it exists)."""
    corpus = read_corpus(Path(opts["corpus"]))
    queries = read_corpus(Path(opts["queries"]))
    dropped_queries, dropped_passages = drop_plan(queries, opts["drop_relevant"]) if opts["drop_relevant"] else (set(), set())
    corpus = [p for p in corpus if str(p["id"]) not in dropped_passages]
    if opts.get("offset"):
        queries = queries[opts["offset"]:]
    if opts["limit"]:
        queries = queries[: opts["limit"]]
    user = eval_owner(opts["owner"])
    name = opts["kb"] or f"eval-{Path(opts['corpus']).parent.name}-{hashlib.sha256(json.dumps(sorted(dropped_passages)).encode()).hexdigest()[:8]}-{int(time.time())}"
    kb = KnowledgeBase.objects.filter(name=name, owner=user).first()
    if kb is None:
        kb = kb_create(owner=user, name=name)
    load_missing(kb, corpus, user, quiet=quiet)
    return EvalSet(kb=kb, user=user, queries=queries, dropped=dropped_queries)


def load_missing(kb: KnowledgeBase, corpus: list[dict], user, *, quiet: bool) -> None:
    """Ingest passages not yet in the KB (by external id), in this process."""
    have = set(Document.objects.filter(kb=kb, status=DocumentStatus.READY).values_list("external_id", flat=True))
    todo = [p for p in corpus if str(p["id"]) not in have]
    if not todo:
        return
    settings.ZHIKU_INGEST_MODE = "sync"
    # A bulk load is one change: no refit after every passage (kb_eval --self-calibrate fits once, after the load).
    settings.ZHIKU_AUTO_CALIBRATE = False
    started = time.perf_counter()

    def progress(n: int) -> None:
        if not quiet:
            sys.stderr.write(f"\r  loaded {n}/{len(todo)} passages ({time.perf_counter() - started:.0f} s)")

    corpus_ingest(kb=kb, passages=todo, user=user, progress=progress)
    if not quiet:
        sys.stderr.write("\n")


def add_corpus_arguments(parser) -> None:
    """The options both evaluation commands take."""
    parser.add_argument("--corpus", required=True, help='JSONL of {"id","title","text"}; one document each')
    parser.add_argument("--queries", required=True, help='JSONL of {"id","text","relevant":[ids]} (chat_eval: and "answers")')
    parser.add_argument("--kb", help="KB name: reused if it exists (loaded before), else created and loaded")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries")
    parser.add_argument("--offset", type=int, default=0, help="skip the first N queries (with --limit: check on questions not looked at)")
    parser.add_argument("--drop-relevant", type=int, default=0,
                        help="make N queries unanswerable by leaving their passages out of the corpus (not-found test)")
    parser.add_argument("--owner", help="owner of a new KB (default: a 'bench' user)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--per-query", action="store_true", help="include per-query outcomes in --json output")
