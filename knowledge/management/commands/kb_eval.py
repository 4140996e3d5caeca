"""Evaluate retrieval on a labelled corpus.

`manage.py kb_eval (--corpus C | --files DIR) --queries Q [--mode M] [--top-k N] [--kb NAME] [--json]`."""
from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from knowledge.models import KnowledgeBase
from knowledge.retrieval.pipeline import MODES
from knowledge.services.calibration import recalibrate_kb
from knowledge.services.evaluation import LabelledQuery, evaluate

from ._corpus import add_corpus_arguments, eval_set, stderr_progress


class Command(BaseCommand):
    help = "Load a corpus into a KB (or reuse it) and measure retrieval: recall, MRR, nDCG, not-found rates, latency."

    def add_arguments(self, parser):
        add_corpus_arguments(parser)
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument("--top-k", type=int, default=10)
        parser.add_argument("--with-kbs", nargs="+", default=[],
                            help="names of other KBs (same owner, loaded before) searched together with this one")
        parser.add_argument("--self-calibrate", action="store_true",
                            help="recalibrate the KB's judge from its own content (or labelled questions) before measuring; "
                                 "without it a KB this command creates keeps the shipped judge")

    def handle(self, *args, **opts):
        loaded = eval_set(opts, quiet=opts["json"])
        kb, user = loaded.kb, loaded.user
        if opts["self_calibrate"]:
            row = recalibrate_kb(kb.pk)
            kb.refresh_from_db()
            if not opts["json"]:
                self.stdout.write(f"calibrated ({row.status}, {row.source}): slope {row.slope:.3f} offset {row.offset:.3f}")
        labelled = [LabelledQuery(id=str(q["id"]), text=q["text"], relevant=loaded.relevant(q)) for q in loaded.queries]
        started = time.perf_counter()
        others = []
        for other in opts["with_kbs"]:
            found = KnowledgeBase.objects.filter(name=other, owner=user).first()
            if found is None:
                raise CommandError(f"No KB {other!r} of {user.username}: load it first with kb_eval --kb {other}.")
            others.append(found.pk)
        metrics = evaluate(user=user, kb_ids=[kb.pk, *others], queries=labelled, mode=opts["mode"], top_k=opts["top_k"],
                           progress=None if opts["json"] else stderr_progress(len(labelled), every=100, noun="queries"), labels_kb_id=kb.pk)
        metrics["seconds"] = round(time.perf_counter() - started, 1)
        metrics["kb"] = {"id": kb.pk, "name": kb.name, "chunks": kb.chunks.count(), "embedding_model": kb.embedding_model,
                         "calibration": [kb.calibration_slope, kb.calibration_offset], "threshold": kb.score_threshold,
                         "answer_threshold": kb.answer_threshold}
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
        for kind, shares in metrics["verdicts"].items():
            self.stdout.write(f"  verdicts, {kind:<14} " + ("—" if shares is None else
                              ", ".join(f"{v} {x:.3f}" for v, x in shares.items())))
        self.stdout.write("  latency ms (p50 / p95): " + ", ".join(
            f"{k} {v['p50']}/{v['p95']}" for k, v in metrics["latency_ms"].items()))

