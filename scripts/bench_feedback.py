"""Print what learning from labels does (issue 38 item 3): a held-out half never hurt, paraphrases of labelled questions helped.

Usage: python scripts/bench_feedback.py [--sets cmrc2018/dev,drcd/dev,docs-zh/faq] [--sample 150] [--answers 60]
       [--passages 0] [--seed 38] [--bench DIR]

Per set, through the platform's own ingestion, labels and search (nothing of the retrieval core is called directly):

1. The corpus is loaded into a KB of its own (one document per passage, ``knowledge.services.corpus``; reused when
   loaded before), owned by the inactive ``bench`` user; its labels are cleared and learning is off. ``--passages``
   cuts a large set's corpus to whole articles in a fixed hashed order (ingestion costs about a second a passage on
   two shared cores), with the questions on them.
2. The answerable questions split into halves by a stable hash of their id (sha256, even / odd): half A is labelled,
   half B held out. Each question of A becomes a confirmed label as an owner makes it on the hit-testing page
   (``knowledge.services.labels.label_passage``): its gold passage's chunk (the one holding an answer span, else the
   passage's first), so the label is of this KB only.
3. Paraphrases of half A's questions, written by fixed rules (``paraphrase``: a polite opening or a closing 呢, 什么 →
   啥, 多少 → 几, 哪里 → 哪儿, 「X是什么」 ↔ 「什么是X」, 为什么 → 为何, 什么时候 → 何时 …, in the set's script): no
   paraphrase data exists for these sets. A's questions (and so their paraphrases) split again by hash: A1's are
   used only to print the cosine sweep the learning line is chosen from (``--line-sweep``), A2's are measured.
4. Half B (a fixed-seed sample of ``--sample`` for the large sets; docs-zh/faq always whole) and A2's paraphrases
   are searched with learning off, then on: MRR@10 of the relevant passage (``knowledge.services.evaluation``'s
   definition: each document once, at its best chunk), and ``answer_contains`` (``chat.evaluation``: the first
   ``--answers`` of each group asked as real chat turns, extractive without a language model, the answer holding
   a span in its first 200 characters). Half B's questions boosted by a label of A are counted (false boosts:
   the label's passage is not the question's own) and whether their reciprocal rank fell.

Figures only, nothing asserted; they are in docs/relevance.md, *Learning from feedback*.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scale_corpus import default_bench_dir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

SETS = ("cmrc2018/dev", "drcd/dev", "docs-zh/faq")
# Word rules, each applied once where it matches (at most two per question, in this order).
SIMPLE_RULES = [("为什么", "为何"), ("什么时候", "何时"), ("什么", "啥"), ("多少", "几"), ("哪里", "哪儿"),
                ("如何", "怎么"), ("怎样", "怎么"), ("哪个", "哪一个"), ("是谁", "是哪位"), ("哪一年", "哪年")]
TRAD_RULES = [("為什麼", "為何"), ("什麼時候", "何時"), ("什麼", "甚麼"), ("多少", "幾"), ("哪裡", "哪兒"),
              ("如何", "怎麼"), ("怎樣", "怎麼"), ("哪個", "哪一個"), ("是誰", "是哪位"), ("哪一年", "哪年")]
OPENINGS = {"zh": ("请问", "我想知道", "想问一下", ""), "trad": ("請問", "我想知道", "想問一下", "")}
_END = re.compile(r"[\s?？。.!！]+$")


def stable(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def paraphrase(qid: str, text: str, *, traditional: bool) -> str:
    """A fixed rewrite of ``text`` that keeps its meaning: the word rules, 「X是什么」 ↔ 「什么是X」, an opening or a
    closing 呢 chosen by the id's hash; "" when nothing changed."""
    body = _END.sub("", text.strip())
    what, rules = ("什麼", TRAD_RULES) if traditional else ("什么", SIMPLE_RULES)
    if body.endswith("是" + what) and len(body) > 4:  # 「X是什么」 → 「什么是X」
        body = what + "是" + body[: -len("是" + what)]
    elif body.startswith(what + "是") and len(body) > 4:
        body = body[len(what + "是"):] + "是" + what
    else:
        applied = 0
        for old, new in rules:
            if old in body and applied < 2:
                body = body.replace(old, new, 1)
                applied += 1
    h = stable(qid)
    opening = OPENINGS["trad" if traditional else "zh"][h % 4]
    closing = "呢" if (h >> 2) % 2 and not body.endswith(("呢", "吗", "嗎")) else ""
    out = f"{opening}{body}{closing}？"
    return "" if _END.sub("", out) == _END.sub("", text.strip()) else out


@dataclass
class Group:
    name: str
    questions: list[dict]
    rr: dict[str, list[float]] = field(default_factory=dict)
    answers: dict[str, float | None] = field(default_factory=dict)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def subset(corpus: list[dict], queries: list[dict], limit: int) -> tuple[list[dict], list[dict]]:
    """Whole articles (by title), taken in a fixed hashed order until ``limit`` passages, and the questions on them;
    ``limit`` 0: everything. Keeping whole articles keeps a passage's siblings, which DRCD's questions must be told from."""
    if not limit or len(corpus) <= limit:
        return corpus, queries
    articles: dict[str, list[dict]] = {}
    for p in corpus:
        articles.setdefault(str(p.get("title") or p["id"]), []).append(p)
    kept: list[dict] = []
    for title in sorted(articles, key=lambda t: hashlib.sha256(t.encode()).hexdigest()):
        if len(kept) >= limit:
            break
        kept += articles[title]
    ids = {str(p["id"]) for p in kept}
    return kept, [q for q in queries if not q.get("relevant") or {str(r) for r in q["relevant"]} <= ids]


def load_kb(split: str, bench: Path, limit: int = 0):
    from knowledge.management.commands._corpus import eval_owner, load_missing
    from knowledge.models import EvalQuestion, KnowledgeBase
    from knowledge.services.kbs import kb_create

    folder = bench / split
    corpus = read_jsonl(folder / "corpus.jsonl")
    answers = folder / "queries.answers.jsonl"
    queries = read_jsonl(answers if answers.is_file() else folder / "queries.jsonl")
    corpus, queries = subset(corpus, queries, limit)
    user = eval_owner(None)
    name = f"学习评测 bench_feedback {split}" + (f" {len(corpus)}" if limit else "")
    kb = KnowledgeBase.objects.filter(name=name, owner=user).first() or kb_create(owner=user, name=name)
    started = time.perf_counter()
    load_missing(kb, corpus, user, quiet=False)
    loaded = time.perf_counter() - started
    EvalQuestion.objects.filter(kb=kb).delete()
    KnowledgeBase.objects.filter(pk=kb.pk).update(learn_from_feedback=False)
    kb.refresh_from_db()
    return kb, user, queries, loaded


def gold_chunk(kb, query: dict) -> int | None:
    """The chunk of the query's first relevant passage holding an answer span (else its first chunk)."""
    from knowledge.models import Chunk

    chunks = list(Chunk.objects.filter(kb=kb, document__external_id=str(query["relevant"][0]), enabled=True)
                  .order_by("ordinal").values_list("pk", "content"))
    for pk, content in chunks:
        if any(a and a in content for a in query.get("answers") or []):
            return pk
    return chunks[0][0] if chunks else None


def search_rr(kb, user, groups: list[Group], condition: str) -> dict[str, list[dict]]:
    """Each question searched as the KB's owner: its reciprocal rank within 10 and what learning moved."""
    from knowledge.retrieval.request import SearchRequest
    from knowledge.services.evaluation import _ranked_documents, _ranking_scores
    from knowledge.services.search import Search, search

    out: dict[str, list[dict]] = {}
    for group in groups:
        rows = []
        for q in group.questions:
            result = search(Search(SearchRequest(query=q["text"], top_k=10, debug=True), user=user, kbs=[kb]))
            relevant = {str(r) for r in q["relevant"]}
            ranked = _ranked_documents(result.candidates, relevant, kb.pk)
            _, rr, _ = _ranking_scores(ranked, relevant, (1,))
            moves = (result.debug or {}).get("learned") or []
            rows.append({"id": q["id"], "rr": rr, "moves": moves})
        group.rr[condition] = [r["rr"] for r in rows]
        out[group.name] = rows
    return out


def answer_contains(kb, user, group: Group, n: int, condition: str) -> None:
    from chat.evaluation import AnswerQuestion, answer_evaluate

    asked = [q for q in group.questions if q.get("answers")][:n]
    if not asked:
        group.answers[condition] = None
        return
    metrics = answer_evaluate(user=user, kb_ids=[kb.pk], llm=None, questions=[
        AnswerQuestion(id=str(q["id"]), text=q["text"], relevant=[str(r) for r in q["relevant"]], answers=q["answers"])
        for q in asked])
    group.answers[condition] = metrics["answer_contains"]
    group.answers[condition + "_n"] = len(asked)


def line_sweep(kb, tune: list[dict], labels_by_text: dict[str, int], embed) -> list[tuple[float, float, float]]:
    """For lines 0.90 … 0.99: the share of A1's paraphrases reaching their own label, and of A1's questions whose
    nearest other label (another question, another passage) reaches the line."""
    from knowledge.models import EvalQuestion

    rows = list(EvalQuestion.objects.filter(kb=kb).values_list("id", "text", "chunk_ids", "question_embedding"))
    matrix = np.stack([np.asarray(r[3], dtype=np.float32) for r in rows])
    out = []
    own, impostor = [], []
    for q in tune:
        vec = embed(q["para"])
        sims = matrix @ vec
        mine = [i for i, r in enumerate(rows) if r[1] == q["text"]]
        if not mine:
            continue
        own.append(float(sims[mine[0]]))
        chunks = set(rows[mine[0]][2])
        others = [float(sims[i]) for i, r in enumerate(rows) if i != mine[0] and not set(r[2]) & chunks]
        impostor.append(max(others) if others else -1.0)
    for line in (0.90, 0.92, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99):
        out.append((line, float(np.mean([s >= line for s in own])) if own else float("nan"),
                    float(np.mean([s >= line for s in impostor])) if impostor else float("nan")))
    return out


def run_set(split: str, args) -> dict:
    from knowledge.embeddings import get_embedder
    from knowledge.models import KnowledgeBase, LabelSource
    from knowledge.services.labels import label_passage

    small = split.startswith("docs-zh")
    kb, user, queries, loaded = load_kb(split, args.bench, 0 if small else args.passages)
    traditional = split.startswith("drcd")
    answerable = [q for q in queries if q.get("relevant")]
    half_a = [q for q in answerable if stable(str(q["id"])) % 2 == 0]
    half_b = [q for q in answerable if stable(str(q["id"])) % 2 == 1]
    rng = random.Random(args.seed)
    held = half_b if small or len(half_b) <= args.sample else rng.sample(half_b, args.sample)
    started = time.perf_counter()
    labelled = 0
    for q in half_a:
        chunk = gold_chunk(kb, q)
        if chunk is not None:
            label_passage(user=kb.owner, kb=kb, question=q["text"], chunk_id=chunk, source=LabelSource.IMPORT)
            labelled += 1
    label_s = time.perf_counter() - started
    paras = []
    for q in half_a:
        text = paraphrase(str(q["id"]), q["text"], traditional=traditional)
        if text:
            paras.append({**q, "text": text, "para": text, "orig": q["text"]})
    tune = [p for p in paras if (stable(str(p["id"])) >> 4) % 2 == 0]
    measured = [p for p in paras if (stable(str(p["id"])) >> 4) % 2 == 1]
    if not small and len(measured) > args.sample:
        measured = rng.sample(measured, args.sample)
    embedder = get_embedder(kb.embedding_model)
    sweep = line_sweep(kb, [{**p, "text": p["orig"]} for p in tune[: args.sample]], {}, embedder.embed_query)
    groups = [Group("held-out half B", held), Group("paraphrases of A", measured)]
    timings = {"load_s": round(loaded, 1), "label_s": round(label_s, 1)}
    results: dict[str, dict] = {}
    for condition, on in (("off", False), ("on", True)):
        KnowledgeBase.objects.filter(pk=kb.pk).update(learn_from_feedback=on)
        kb.refresh_from_db()
        started = time.perf_counter()
        results[condition] = search_rr(kb, user, groups, condition)
        timings[f"search_{condition}_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        if args.answers:
            for group in groups:
                answer_contains(kb, user, group, args.answers, condition)
        timings[f"answers_{condition}_s"] = round(time.perf_counter() - started, 1)
    KnowledgeBase.objects.filter(pk=kb.pk).update(learn_from_feedback=False)
    # False boosts: held-out questions a label moved, whose label's passage is not their own.
    boosted = [(off, on) for off, on in zip(results["off"]["held-out half B"], results["on"]["held-out half B"], strict=True)
               if any(m["action"] in ("boosted", "added") for m in on["moves"])]
    hurt = sum(1 for off, on in boosted if on["rr"] < off["rr"])
    helped = sum(1 for off, on in boosted if on["rr"] > off["rr"])
    summary = {
        "set": split, "documents": kb.documents.count(), "chunks": kb.chunks.count(), "labels": labelled,
        "half_a": len(half_a), "half_b": len(half_b),
        "held_out_measured": len(held), "paraphrases_measured": len(measured), "timings": timings,
        "sweep": sweep, "boosted_held_out": len(boosted), "boost_hurt": hurt, "boost_helped": helped,
        "groups": {g.name: {"mrr_off": round(float(np.mean(g.rr["off"])), 4), "mrr_on": round(float(np.mean(g.rr["on"])), 4),
                            "n": len(g.questions), **g.answers} for g in groups},
        "paraphrase_examples": [(p["orig"], p["text"]) for p in measured[:5]],
    }
    print(json.dumps(summary, ensure_ascii=False), flush=True)
    return summary


def table(summaries: list[dict]) -> None:
    print("\n| set | group | n | MRR@10 off → on | answer_contains off → on (n) |")
    print("|---|---|---|---|---|")
    for s in summaries:
        for name, g in s["groups"].items():
            ac = (f"{g['off']:.3f} → {g['on']:.3f} ({g.get('off_n')})" if g.get("off") is not None else "—")
            print(f"| {s['set']} | {name} | {g['n']} | {g['mrr_off']:.4f} → {g['mrr_on']:.4f} | {ac} |")
    print("\n| set | held-out boosted | hurt (RR fell) | helped (RR rose) |")
    print("|---|---|---|---|")
    for s in summaries:
        print(f"| {s['set']} | {s['boosted_held_out']} / {s['held_out_measured']} | {s['boost_hurt']} | {s['boost_helped']} |")
    print("\nline sweep on A1 (paraphrase reaches its own label / nearest other label reaches the line):")
    for s in summaries:
        print(f"  {s['set']}: " + ", ".join(f"{line:.2f}: {own:.3f}/{imp:.3f}" for line, own, imp in s["sweep"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--sample", type=int, default=150, help="questions per group for the large sets (fixed seed)")
    parser.add_argument("--answers", type=int, default=150, help="questions per group asked as chat turns (0: none)")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--passages", type=int, default=0,
                        help="the large sets' corpus cut to whole articles up to this many passages (0: all)")
    parser.add_argument("--bench", type=Path, default=default_bench_dir(),
                        help="The benchmark data: $ZHIKU_BENCH_DIR, else shared/bench beside the checkout")
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings

    settings.ZHIKU_AUTO_CALIBRATE = False  # the labels are loaded in bulk: no refit after each
    started = time.perf_counter()
    summaries = [run_set(split, args) for split in args.sets.split(",")]
    table(summaries)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"\ntotal {time.perf_counter() - started:.0f} s; load average {os.getloadavg()}; {when}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
