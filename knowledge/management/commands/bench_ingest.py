"""Ingestion benchmark: `manage.py bench_ingest --corpus corpus.jsonl` prints time per stage and chunks/s."""
from __future__ import annotations

import json
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.services.corpus import corpus_ingest
from knowledge.services.kbs import kb_create, kb_delete

STAGES = ("parse", "chunk", "tokenize", "embed", "write")


class Command(BaseCommand):
    help = "Load a JSONL corpus ({id,title,text} per line, one document each) into a fresh KB and time each stage."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True)
        parser.add_argument("--limit", type=int, default=0, help="only the first N passages")
        parser.add_argument("--model", default=None, help="embedding model (default: ZHIKU_EMBEDDING_MODEL)")
        parser.add_argument("--batch", type=int, default=20, help="files per upload call")
        parser.add_argument("--keep", action="store_true", help="keep the KB afterwards")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        path = Path(opts["corpus"])
        if not path.is_file():
            raise CommandError(f"No corpus at {path}.")
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if opts["limit"]:
            rows = rows[: opts["limit"]]
        settings.ZHIKU_INGEST_MODE = "sync"  # measure in this process, stage by stage
        settings.ZHIKU_AUTO_CALIBRATE = False  # ingestion alone: no judge refit after every passage
        User = get_user_model()
        user, _ = User.objects.get_or_create(username="bench", defaults={"is_active": False})
        kb = kb_create(owner=user, name=f"bench-ingest-{int(time.time())}", embedding_model=opts["model"])
        from knowledge.embeddings import get_embedder

        get_embedder(kb.embedding_model)  # load the model outside the timed section
        started = time.perf_counter()
        corpus_ingest(kb=kb, passages=rows, batch=opts["batch"])
        total = time.perf_counter() - started
        docs = list(Document.objects.filter(kb=kb))
        failed = [d for d in docs if d.status != DocumentStatus.READY]
        stage_s = {s: sum(d.metadata.get("timings_ms", {}).get(s, 0.0) for d in docs) / 1000 for s in STAGES}
        stage_s["other (upload, queue, progress)"] = max(0.0, total - sum(stage_s.values()))
        chunks = Chunk.objects.filter(kb=kb).count()
        result = {
            "documents": len(docs), "failed": len(failed), "chunks": chunks, "total_s": round(total, 2),
            "chunks_per_s": round(chunks / total, 2) if total else None, "model": kb.embedding_model,
            "stages_s": {k: round(v, 3) for k, v in stage_s.items()},
            "stages_share": {k: round(v / total, 4) if total else 0 for k, v in stage_s.items()},
            "outside_embedding_share": round(1 - stage_s["embed"] / total, 4) if total else None,
        }
        if not opts["keep"]:
            kb_delete(kb=kb)
        if opts["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
            return
        self.stdout.write(f"corpus {path}  model {result['model']}")
        self.stdout.write(f"documents {result['documents']} (failed {result['failed']})  chunks {chunks}  "
                          f"total {result['total_s']} s  {result['chunks_per_s']} chunks/s")
        for k, v in stage_s.items():
            self.stdout.write(f"  {k:<32} {v:8.2f} s  {100 * v / total:5.1f}%")
        self.stdout.write(f"outside the embedding model: {100 * result['outside_embedding_share']:.1f}% of the total")
