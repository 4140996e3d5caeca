"""Evaluate answers on a labelled corpus.

`manage.py chat_eval (--corpus C | --files DIR) (--queries Q | --followups F) --kb NAME [--llm] [--limit N] [--json]`
"""
from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from chat.evaluation import AnswerQuestion, FollowUp, answer_evaluate, followup_evaluate
from chat.llm import llm_config
from knowledge.management.commands._corpus import add_corpus_arguments, eval_set, stderr_progress

SHOWN = ("answer_contains", "answer_contains_full", "answer_contains_answered", "answer_contains_given",
         "answer_precision_answered", "citation_precision",
         "not_found_rate_answerable", "not_found_rate_unanswerable", "answer_chars_p50", "first_token_ms_p50",
         "reader_ms_p50", "reader_ms_p95")


class Command(BaseCommand):
    help = ("Load a corpus into a KB (or reuse it) and ask each question as a chat turn: answer contains the answer, "
            "citation precision, not-found rates, answer length, time to first token.")

    def add_arguments(self, parser):
        add_corpus_arguments(parser)
        parser.add_argument("--llm", action="store_true",
                            help="answer with the site's default LLM (the console's default model, else ZHIKU_LLM_BASE_URL "
                                 "and ZHIKU_LLM_MODEL); default: extractive")
        parser.add_argument("--followups", metavar="FILE",
                            help="JSONL of follow-up pairs {\"id\", \"previous\" (a question or a list of them), \"followup\", "
                                 "\"answer\"}: each follow-up is asked after its previous question(s) in one conversation; "
                                 "reports the share of replies holding the answer and of wrong replies marked answered")

    def handle(self, *args, **opts):
        config = llm_config() if opts["llm"] else None
        if opts["llm"] and config is None:
            raise CommandError("--llm needs a default model: ZHIKU_LLM_BASE_URL and ZHIKU_LLM_MODEL, or one chosen in the console.")
        if opts.get("followups"):
            return self.followups(opts, config)
        loaded = eval_set(opts, quiet=opts["json"])
        questions = [AnswerQuestion(id=str(q["id"]), text=q["text"], relevant=loaded.relevant(q),
                                    answers=[str(a) for a in q.get("answers") or []]) for q in loaded.queries]
        started = time.perf_counter()
        metrics = answer_evaluate(user=loaded.user, kb_ids=[loaded.kb.pk], questions=questions, llm=config,
                                  progress=None if opts["json"] else stderr_progress(len(questions), every=20, noun="questions"))
        metrics["mode"] = "llm" if config else "extractive"
        metrics["seconds"] = round(time.perf_counter() - started, 1)
        metrics["kb"] = {"id": loaded.kb.pk, "name": loaded.kb.name, "chunks": loaded.kb.chunks.count()}
        if not opts["per_query"]:
            metrics.pop("per_query")
        if opts["json"]:
            self.stdout.write(json.dumps(metrics, ensure_ascii=False))
            return
        self.stdout.write("")
        self.stdout.write(f"KB {loaded.kb.name!r} (id {loaded.kb.pk}); {metrics['mode']} answers; {metrics['answerable']} answerable "
                          f"({metrics['with_answers']} with answer spans) + {metrics['unanswerable']} unanswerable questions")
        for key in SHOWN:
            value = metrics[key]
            self.stdout.write(f"  {key:<28} {'—' if value is None else value}")
        for kind, shares in metrics["verdicts"].items():
            self.stdout.write(f"  verdicts, {kind:<18} " + ("—" if shares is None else
                              ", ".join(f"{v} {x:.3f}" for v, x in shares.items())))


    def followups(self, opts, config):
        from pathlib import Path

        path = Path(opts["followups"])
        if not path.is_file():
            raise CommandError(f"--followups: no such file {path}")
        try:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            pairs = [FollowUp(id=str(r.get("id", i)), previous=[r["previous"]] if isinstance(r["previous"], str)
                              else [str(x) for x in r["previous"]], followup=str(r["followup"]), answer=str(r["answer"]))
                     for i, r in enumerate(rows, 1)]
        except (ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"--followups: each line must be {{\"previous\", \"followup\", \"answer\"}} ({exc})") from exc
        if opts.get("limit"):
            pairs = pairs[: opts["limit"]]
        opts = {**opts, "queries": opts.get("queries") or None}
        loaded = eval_set(opts, quiet=opts["json"], need_queries=False)
        started = time.perf_counter()
        metrics = followup_evaluate(user=loaded.user, kb_ids=[loaded.kb.pk], pairs=pairs, llm=config,
                                    progress=None if opts["json"] else stderr_progress(len(pairs), every=10, noun="follow-ups"))
        metrics["mode"] = "llm" if config else "extractive"
        metrics["seconds"] = round(time.perf_counter() - started, 1)
        if not opts["per_query"]:
            metrics.pop("per_pair")
        if opts["json"]:
            self.stdout.write(json.dumps(metrics, ensure_ascii=False))
            return
        self.stdout.write("")
        self.stdout.write(f"KB {loaded.kb.name!r}; {metrics['mode']} answers; {metrics['pairs']} follow-ups")
        for key in ("holds_answer", "wrong_answered", "answered_holds", "reader_ms_p50", "reader_ms_p95"):
            value = metrics[key]
            self.stdout.write(f"  {key:<28} {'—' if value is None else value}")
        self.stdout.write("  verdicts                     " + ("—" if metrics["verdicts"] is None else
                          ", ".join(f"{v} {x:.3f}" for v, x in metrics["verdicts"].items())))
