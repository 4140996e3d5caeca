"""A labelled corpus as the evaluation commands use it (kb_eval, chat_eval): read it, drop passages, load it into a KB.

The corpus is a JSONL of passages (``--corpus``, one document each) or a folder of files a person would
upload (``--files``: DOCX, PDF, scans, sheets, slides ..., each ingested as an upload is).
"""
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

from core.errors import ApplicationError
from knowledge.ingestion.run import document_ingest
from knowledge.ingestion.upload import UploadedItem, document_upload
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


def eval_set(opts: dict, *, quiet: bool, need_queries: bool = True) -> EvalSet:
    """Read ``--corpus`` or ``--files`` and ``--queries``, drop ``--drop-relevant`` passages or files, load the rest
    into ``--kb`` (reused if it exists)."""
    if not opts.get("queries") and need_queries:
        raise CommandError("--queries is required.")
    queries = read_corpus(Path(opts["queries"])) if opts.get("queries") else []
    dropped_queries, dropped_passages = drop_plan(queries, opts["drop_relevant"]) if opts["drop_relevant"] else (set(), set())
    if opts.get("files"):
        source = Path(opts["files"])
        # A query names a file as models.document_labels does (its name or stem): a dropped name drops the file.
        files = [f for f in folder_files(source) if not {f.name, f.stem} & dropped_passages]
    else:
        source = Path(opts["corpus"])
        corpus = [p for p in read_corpus(source) if str(p["id"]) not in dropped_passages]
    if opts.get("offset"):
        queries = queries[opts["offset"]:]
    if opts["limit"]:
        queries = queries[: opts["limit"]]
    user = eval_owner(opts["owner"])
    label = source.name if opts.get("files") else source.parent.name
    name = opts["kb"] or f"eval-{label}-{hashlib.sha256(json.dumps(sorted(dropped_passages)).encode()).hexdigest()[:8]}-{int(time.time())}"
    kb = KnowledgeBase.objects.filter(name=name, owner=user).first()
    if kb is None:
        kb = kb_create(owner=user, name=name)
    if opts.get("files"):
        load_files(kb, files, user, quiet=quiet)
    else:
        load_missing(kb, corpus, user, quiet=quiet)
    return EvalSet(kb=kb, user=user, queries=queries, dropped=dropped_queries)


def folder_files(folder: Path) -> list[Path]:
    """The files of ``folder`` (not its sub-folders, not hidden files), by name."""
    if not folder.is_dir():
        raise CommandError(f"No folder at {folder}.")
    files = sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))
    if not files:
        raise CommandError(f"No files in {folder}.")
    return files


def _bulk_load_settings() -> None:
    settings.ZHIKU_INGEST_MODE = "sync"
    # A bulk load is one change: no refit after every document (kb_eval --self-calibrate fits once, after the load).
    settings.ZHIKU_AUTO_CALIBRATE = False


def load_files(kb: KnowledgeBase, files: list[Path], user, *, quiet: bool) -> None:
    """Upload each file as a person does (``documents.document_upload``) and ingest it in this process.

    A file whose bytes equal the version the KB serves under that name is left as it is (the upload
    service's own rule); a file that fails to ingest stops the evaluation with its error.
    """
    _bulk_load_settings()
    for path in files:
        started = time.perf_counter()
        try:
            outcome = document_upload(kb=kb, items=[UploadedItem(name=path.name, data=path.read_bytes())], user=user)[0]
        except ApplicationError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        if outcome.unchanged and outcome.document.status == DocumentStatus.READY:
            continue
        document = document_ingest(document_id=outcome.document.pk)
        if document is None or document.status != DocumentStatus.READY:
            error = f"{document.error_code}: {document.error_message}" if document is not None else "deleted"
            raise CommandError(f"{path}: ingestion failed ({error}).")
        if not quiet:
            sys.stderr.write(f"  loaded {path.name}: {document.chunks.count()} chunks ({time.perf_counter() - started:.0f} s)\n")


def load_missing(kb: KnowledgeBase, corpus: list[dict], user, *, quiet: bool) -> None:
    """Ingest passages not yet in the KB (by external id), in this process."""
    have = set(Document.objects.filter(kb=kb, status=DocumentStatus.READY).values_list("external_id", flat=True))
    todo = [p for p in corpus if str(p["id"]) not in have]
    if not todo:
        return
    _bulk_load_settings()
    started = time.perf_counter()

    def progress(n: int) -> None:
        if not quiet:
            sys.stderr.write(f"\r  loaded {n}/{len(todo)} passages ({time.perf_counter() - started:.0f} s)")

    corpus_ingest(kb=kb, passages=todo, user=user, progress=progress)
    if not quiet:
        sys.stderr.write("\n")


def add_corpus_arguments(parser) -> None:
    """The options both evaluation commands take."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", help='JSONL of {"id","title","text"}; one document each')
    source.add_argument("--files", help="a folder of files (DOCX, PDF, XLSX ...), each uploaded and ingested as a person's "
                                        "upload is; a query's relevant names a file by its name or stem")
    parser.add_argument("--queries", help='JSONL of {"id","text","relevant":[ids]} (chat_eval: and "answers")')
    parser.add_argument("--kb", help="KB name: reused if it exists (loaded before), else created and loaded")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries")
    parser.add_argument("--offset", type=int, default=0, help="skip the first N queries (with --limit: check on questions not looked at)")
    parser.add_argument("--drop-relevant", type=int, default=0,
                        help="make N queries unanswerable by leaving their passages (or files) out of the corpus (not-found test)")
    parser.add_argument("--owner", help="owner of a new KB (default: a 'bench' user)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--per-query", action="store_true", help="include per-query outcomes in --json output")
