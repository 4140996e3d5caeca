"""Fitting the not-found judge and choosing the graded verdict's two lines, each checked leaving one set out."""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from knowledge.retrieval import defaults
from knowledge.retrieval.judge import fit_logistic, model_from_fit, models_as_python
from tuning.data import CACHE, MODEL, Split
from tuning.evidence import auc, evidence_path, offtopic_path, rates
from tuning.quality import metrics

# --- fitting the judge ----------------------------------------------------------------------------

# The models the judge ships, by the signals they need (knowledge/retrieval/judge.py).
JUDGE_FEATURES: dict[str, tuple[str, ...]] = {
    "hybrid": ("coverage", "missing", "cosine"),
    "hybrid-z": ("coverage", "missing", "cosine_z"),
    "keyword": ("coverage", "missing"),
    "vector": ("cosine",),
}
# The judge this one replaced: fitted on cmrc2018 + drcd in-sample (its constants, for the comparison row).
PREVIOUS = (np.array([5.204, 2.0143, 1.2877, 11.6621, 43.4503]), -16.0775)


def _xy(rows: list[dict], features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The fused top candidate's signals per question (what the search-level relevance is fitted on)."""
    X, y = [], []
    for r in rows:
        c = r["candidates"][0] if r["candidates"] else {}
        X.append([_feature(c, f) for f in features])
        y.append(1 if r["answerable"] else 0)
    return np.array(X, dtype=np.float64), np.array(y)


def _feature(c: dict, name: str) -> float:
    from knowledge.retrieval.judge import COSINE_Z_RANGE

    value = c.get(name)
    if value is None:
        return 0.0
    return min(max(float(value), COSINE_Z_RANGE[0]), COSINE_Z_RANGE[1]) if name == "cosine_z" else float(value)


def _fit(data: dict[str, list[dict]], features: Sequence[str], names: Sequence[str]) -> tuple[np.ndarray, float]:
    """Balanced logistic fit over ``names``, each data set carrying the same total weight."""
    Xs, ys, ws = [], [], []
    for n in names:
        X, y = _xy(data[n], features)
        Xs.append(X)
        ys.append(y)
        ws.append(np.full(len(y), 1.0 / len(y)))
    return fit_logistic(np.vstack(Xs), np.concatenate(ys), sample_weight=np.concatenate(ws))


def _head_relevance(rows: list[dict], features: Sequence[str], w: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """The search-level relevance as the pipeline computes it: the best candidate within the judged head."""
    from knowledge.retrieval.judge import JUDGE_DEPTH

    p, y = [], []
    for r in rows:
        logits = [float(np.array([_feature(c, f) for f in features]) @ w + b) for c in r["candidates"][:JUDGE_DEPTH]]
        p.append(1 / (1 + math.exp(-max(logits))) if logits else 0.0)
        y.append(1 if r["answerable"] else 0)
    return np.array(p), np.array(y)


def cmd_judge(splits: list[Split], threshold: float) -> None:
    data = {}
    for split in splits:
        if not evidence_path(split).exists():
            raise SystemExit(f"{evidence_path(split)} missing: run `python scripts/tune_retrieval.py evidence` first")
        data[split.name] = [json.loads(line) for line in open(evidence_path(split), encoding="utf-8")]
    names = list(data)
    print(f"\nLeave one data set out: fit on the others (the fused top candidate's signals, equal weight per set, "
          f"balanced classes), measure the search-level relevance (best of the first 3) on the one left out; "
          f"threshold {threshold}\n")
    print("| model | held-out set | questions | unanswerable rejected | answerable rejected | kept @90% rejected | AUC |")
    print("|---|---|---|---|---|---|---|")
    for n in names:
        rows = data[n]
        y = np.array([1 if r["answerable"] else 0 for r in rows])
        prev = np.array([1 / (1 + math.exp(-(np.array(r["candidates"][0]["previous"]) @ PREVIOUS[0] + PREVIOUS[1])))
                         if r["candidates"] else 0.0 for r in rows])
        cells = " | ".join(f"{v:.3f}" for v in rates(prev, y, threshold))
        print(f"| previous (in-sample on cmrc2018+drcd) | {n} | {len(y)} | {cells} |")
    for model, features in JUDGE_FEATURES.items():
        for held in names:
            w, b = _fit(data, features, [n for n in names if n != held])
            p, y = _head_relevance(data[held], features, w, b)
            print(f"| {model} | {held} | {len(y)} | " + " | ".join(f"{v:.3f}" for v in rates(p, y, threshold)) + " |")
    fitted = []
    for model, features in JUDGE_FEATURES.items():
        w, b = _fit(data, features, names)
        fitted.append(model_from_fit(model, features, w, b))
    print("\nIn-sample with the final constants (fitted on every set), threshold sweep for the hybrid model:\n")
    print("| set | " + " | ".join(f"t={t} rej un / rej ans" for t in (0.3, 0.4, 0.5, 0.6, 0.7)) + " |")
    print("|---|" + "---|" * 5)
    hybrid = fitted[0]
    for n in names:
        p, y = _head_relevance(data[n], hybrid.features, np.array(hybrid.weights), hybrid.intercept)
        cells = " | ".join(f"{np.mean(p[y == 0] < t):.2f} / {np.mean(p[y == 1] < t):.2f}" for t in (0.3, 0.4, 0.5, 0.6, 0.7))
        print(f"| {n} | {cells} |")
    print("\nConstants for knowledge/retrieval/judge.py:\n")
    print(models_as_python(fitted))


def _relevance(rows: list[dict], fits: dict[str, tuple[np.ndarray, float]]) -> np.ndarray:
    """The search-level relevance of each row as ``Judge`` computes it: per candidate the richest model whose
    signals are present (hybrid, else keyword, else vector), the best within the judged head."""
    from knowledge.retrieval.judge import JUDGE_DEPTH

    out = []
    for r in rows:
        logits = []
        for c in r["candidates"][:JUDGE_DEPTH]:
            for name in ("hybrid", "keyword", "vector"):
                features = JUDGE_FEATURES[name]
                if all(c.get(f) is not None for f in features):
                    w, b = fits[name]
                    logits.append(float(np.array([_feature(c, f) for f in features]) @ w + b))
                    break
        out.append(1 / (1 + math.exp(-max(logits))) if logits else 0.0)
    return np.array(out)


def _labels(rows: list[dict]) -> np.ndarray:
    return np.array([1 if r["answerable"] else 0 for r in rows])


def _faq_match(rows: list[dict]) -> np.ndarray:
    """Rows whose judged head holds a FAQ entry matching the question by meaning (never not found, ``pipeline``)."""
    from knowledge.retrieval.judge import JUDGE_DEPTH

    return np.array([max([c.get("question_cosine") or 0.0 for c in r["candidates"][:JUDGE_DEPTH]] or [0.0])
                     >= defaults.FAQ_MATCH_COSINE for r in rows], dtype=bool)


def _chitchat(rows: list[dict]) -> np.ndarray:
    """Rows whose query is talk (``defaults.CHITCHAT_COSINE``): not found unless a FAQ entry matches."""
    return np.array([(r.get("chitchat") or 0.0) >= defaults.CHITCHAT_COSINE for r in rows], dtype=bool)


def _shares(p: np.ndarray, gate: float, line: float, match: np.ndarray | None = None,
            talk: np.ndarray | None = None) -> str:
    """answered / uncertain / not found shares, as ``judging.Judging.verdict`` grades: a FAQ match lifts a
    not-found to uncertain; otherwise talk is not found."""
    if not len(p):
        return "— / — / —"
    match = np.zeros(len(p), dtype=bool) if match is None else match
    talk = np.zeros(len(p), dtype=bool) if talk is None else talk & ~match
    answered, not_found = (p >= line) & ~talk, ((p < gate) & ~match) | talk
    return f"{np.mean(answered):.3f} / {np.mean(~answered & ~not_found):.3f} / {np.mean(not_found):.3f}"


def _read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")] if path.exists() else []


def cmd_verdict(splits: list[Split], *, gate_share: float, answered_share: float, tag: str | None,
                measure: Sequence[Split] = ()) -> None:
    """The two lines of the graded verdict, chosen and checked leaving one data set out.

    For each held-out set: the judge refitted on the others; the not-found gate set on the others so that at most
    ``gate_share`` of each one's answerable questions fall under it, the confidence line so that at most
    ``answered_share`` of each one's unanswerable questions reach it; then the held-out set's outcomes
    (answered / uncertain / not found) for its answerable, unanswerable and off-topic questions.
    """
    # long because: three report tables in turn (each set held out, the shipped lines, the line swept) share one set of fits and rows
    data, off, held_off = {}, {}, {}
    for split in splits:
        if not evidence_path(split).exists():
            raise SystemExit(f"{evidence_path(split)} missing: run `python scripts/tune_retrieval.py evidence` first")
        data[split.name] = _read_rows(evidence_path(split))
        off[split.name] = _read_rows(offtopic_path(split, "tuning"))
        if tag:
            held_off[split.name] = _read_rows(offtopic_path(split, tag))
    names = list(data)
    print(f"\nGate: ≤ {gate_share:.0%} of each training set's answerable questions under it; confidence line: "
          f"≤ {answered_share:.0%} of each training set's unanswerable questions at or above it.\n"
          "Outcomes are answered / uncertain / not found.\n")
    print("| held-out set | gate | line | answerable | unanswerable | off-topic (tuning bank + CMRC) |"
          + (f" off-topic ({tag}) |" if tag else "") + " AUC |")
    print("|---|---|---|---|---|---|" + ("---|" if tag else "") + "---|")

    def fits_for(train: list[str]) -> dict[str, tuple[np.ndarray, float]]:
        return {m: _fit(data, JUDGE_FEATURES[m], train) for m in ("hybrid", "keyword", "vector")}

    def lines(fits, train: list[str]) -> tuple[float, float]:
        gate = min(float(np.quantile(_relevance(data[n], fits)[_labels(data[n]) == 1], gate_share)) for n in train)
        line = max(float(np.quantile(_relevance(data[n], fits)[_labels(data[n]) == 0], 1 - answered_share))
                   for n in train)
        return gate, max(line, gate)

    for held in names:
        train = [n for n in names if n != held]
        fits = fits_for(train)
        gate, line = lines(fits, train)
        p, y, m, k = _relevance(data[held], fits), _labels(data[held]), _faq_match(data[held]), _chitchat(data[held])
        row = (f"| {held} | {gate:.3f} | {line:.3f} | {_shares(p[y == 1], gate, line, m[y == 1], k[y == 1])} | "
               f"{_shares(p[y == 0], gate, line, m[y == 0], k[y == 0])} | "
               f"{_shares(_relevance(off[held], fits), gate, line, _faq_match(off[held]), _chitchat(off[held]))} |")
        if tag:
            h = held_off[held]
            row += f" {_shares(_relevance(h, fits), gate, line, _faq_match(h), _chitchat(h))} |"
        print(row + f" {auc(p, y):.3f} |", flush=True)
    fits = fits_for(names)
    gate, line = lines(fits, names)
    print(f"\nAll sets: gate {gate:.4f}, confidence line {line:.4f}")
    gate, line = defaults.THRESHOLD, defaults.ANSWER_THRESHOLD
    print(f"\nThe shipped lines (gate {gate}, line {line}) with the judge fitted on all of them; the sets after the "
          f"rule were never used to fit or choose anything:\n")
    print("| set | answerable | unanswerable | off-topic (tuning bank + CMRC) |" + (f" off-topic ({tag}) |" if tag else ""))
    print("|---|---|---|---|" + ("---|" if tag else ""))
    for split_name in [*names, "---", *[m.name for m in measure]]:
        if split_name == "---":
            print("|---|---|---|---|" + ("---|" if tag else ""))
            continue
        if split_name not in data:
            held_split = next(m for m in measure if m.name == split_name)
            data[split_name] = _read_rows(evidence_path(held_split))
            off[split_name] = _read_rows(offtopic_path(held_split, "tuning"))
            if tag:
                held_off[split_name] = _read_rows(offtopic_path(held_split, tag))
        rows = data[split_name]
        p, y, m, k = _relevance(rows, fits), _labels(rows), _faq_match(rows), _chitchat(rows)
        o = off[split_name]
        row = (f"| {split_name} | {_shares(p[y == 1], gate, line, m[y == 1], k[y == 1])} | "
               f"{_shares(p[y == 0], gate, line, m[y == 0], k[y == 0])} | "
               f"{_shares(_relevance(o, fits), gate, line, _faq_match(o), _chitchat(o))} |")
        if tag:
            h = held_off[split_name]
            row += f" {_shares(_relevance(h, fits), gate, line, _faq_match(h), _chitchat(h))} |"
        print(row, flush=True)
    print("\nThe confidence line swept, same fit (answerable answered / unanswerable answered):\n")
    sweep = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
    print("| set | " + " | ".join(f"line {t}" for t in sweep) + " |")
    print("|---|" + "---|" * len(sweep))
    for split_name in [*names, *[m.name for m in measure]]:
        p, y = _relevance(data[split_name], fits), _labels(data[split_name])
        print(f"| {split_name} | " + " | ".join(f"{np.mean(p[y == 1] >= t):.2f} / {np.mean(p[y == 0] >= t):.2f}"
                                              for t in sweep) + " |")


def cmd_model_ranking(splits: list[Split]) -> None:
    """MRR@10 of the embedding model's own cosine ranking of the bare passage texts (no platform involved).

    The reference for "the vector path ranks like the model": compare with
    ``kb_eval --mode vector`` on the same set.
    """
    from knowledge.embeddings import get_embedder

    embedder = get_embedder(MODEL)
    for split in splits:
        path = CACHE / f"{split.name}-bare-{MODEL}-{split.corpus_digest}.npy"
        if path.exists():
            passages = np.load(path)
        else:
            passages = np.asarray(embedder.embed_passages([p["text"] for p in split.corpus]), dtype=np.float32)
            np.save(path, passages)
        queries = [q for q in split.queries if q["relevant"]]
        qv = split.vectors("queries")
        by_text = {q["text"]: v for q, v in zip(split.queries, qv, strict=True)}
        norms = np.linalg.norm(passages, axis=1)
        ranked, relevant = [], []
        for q in queries:
            v = by_text[q["text"]]
            sims = passages @ v / (norms * np.linalg.norm(v))
            ranked.append([int(i) for i in np.argsort(-sims)[:10]])
            relevant.append({split.pid_to_idx[r] for r in q["relevant"]})
        m = metrics(ranked, relevant)
        print(f"{split.name}: model's own cosine ranking of the bare texts, {len(queries)} questions: "
              + ", ".join(f"{k} {v:.4f}" for k, v in m.items()), flush=True)
