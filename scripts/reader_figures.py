"""The reader's figures through the platform's own commands (docs/relevance.md, *The reader*).

    .venv/bin/python scripts/reader_figures.py [--off] [--only NAME ...] [--out FILE.json]

Runs ``manage.py chat_eval --json`` on each set (``chat_eval --followups`` for the follow-up sets, ``kb_eval`` with
the off-topic sets as queries on the documentation KBs) with ``ZHIKU_READER`` on (default) or off (``--off``), and
prints one Markdown row per set. CMRC 2018 and DRCD are asked only the questions of the passages the reader's
training held out (``scripts/train_reader.py``: CRC32 of the passage id ≡ 0 mod 5), with the rest of the dev
corpus loaded as distractors.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT.parent / "shared" / "bench"
HELD = ROOT / "devdata" / "heldout"


def _heldout_queries(folder: Path) -> Path:
    out = Path(tempfile.gettempdir()) / f"reader-heldout-{folder.parent.name}.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for line in (folder / "queries.jsonl").open(encoding="utf-8"):
            q = json.loads(line)
            if q.get("relevant") and zlib.crc32(q["relevant"][0].encode()) % 5 == 0:
                f.write(line)
    return out


def _ebike_files() -> Path:
    """The six files (make_files.py needs a CJK font: ``bash scripts/ensure_ocr.sh``)."""
    out = Path(tempfile.gettempdir()) / "reader-ebike-files"
    if not out.exists():
        subprocess.run([sys.executable, str(HELD / "ebike-kb" / "make_files.py"), str(out)], check=True)
    return out


def sets() -> dict[str, list[str]]:
    return {
        "cmrc2018 (held-out passages)": ["--corpus", str(BENCH / "cmrc2018/dev/corpus.jsonl"), "--queries",
                                         str(_heldout_queries(BENCH / "cmrc2018/dev")), "--kb", "rf-cmrc"],
        "drcd (held-out passages)": ["--corpus", str(BENCH / "drcd/dev/corpus.jsonl"), "--queries",
                                     str(_heldout_queries(BENCH / "drcd/dev")), "--kb", "rf-drcd"],
        "docs-zh/faq": ["--corpus", str(BENCH / "docs-zh/faq/corpus.jsonl"), "--queries",
                        str(BENCH / "docs-zh/faq/queries.answers.jsonl"), "--kb", "rf-docs"],
        "manual-zh (tuning)": ["--corpus", str(ROOT / "devdata/manual-zh/corpus.jsonl"), "--queries",
                               str(ROOT / "devdata/manual-zh/queries.jsonl"), "--kb", "rf-manual"],
        "policy-zh (tuning)": ["--corpus", str(ROOT / "devdata/policy-zh/corpus.jsonl"), "--queries",
                               str(ROOT / "devdata/policy-zh/queries.jsonl"), "--kb", "rf-policy"],
        "faq-zh (tuning)": ["--corpus", str(ROOT / "devdata/faq-zh/corpus.jsonl"), "--queries",
                            str(ROOT / "devdata/faq-zh/queries.jsonl"), "--kb", "rf-faq"],
        "apisix-zh": ["--corpus", str(HELD / "apisix-zh/corpus.jsonl"), "--queries", str(HELD / "apisix-zh/queries.jsonl"),
                      "--kb", "rf-apisix"],
        "vant-zh": ["--corpus", str(HELD / "vant-zh/corpus.jsonl"), "--queries", str(HELD / "vant-zh/queries.jsonl"),
                    "--kb", "rf-vant"],
        "ebike-kb (six files)": ["--files", str(Path(tempfile.gettempdir()) / "reader-ebike-files"),
                                 "--queries", str(HELD / "ebike-kb/queries.jsonl"), "--kb", "rf-ebike"],
        "specs-zh": ["--corpus", str(HELD / "specs-zh/corpus.jsonl"), "--queries", str(HELD / "specs-zh/queries.jsonl"),
                     "--kb", "rf-specs"],
        "specs-zh follow-ups": ["--corpus", str(HELD / "specs-zh/corpus.jsonl"), "--followups",
                                str(HELD / "specs-zh/followups.jsonl"), "--kb", "rf-specs"],
    }


OFFTOPIC = {"apisix-zh": "rf-apisix", "vant-zh": "rf-vant", "docs-zh/faq": "rf-docs", "specs-zh": "rf-specs"}


def run(args: list[str], env: dict[str, str], command: str = "chat_eval") -> dict:
    cmd = [sys.executable, str(ROOT / "manage.py"), command, *args, "--json", "--per-query"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _english(metrics: dict, queries: Path) -> str:
    """Of the English twins whose Chinese question's reply holds the answer, the share whose own reply does."""
    twins = {json.loads(x)["id"]: json.loads(x).get("twin") for x in queries.open(encoding="utf-8")}
    by_id = {q["id"]: q for q in metrics["per_query"]}
    pairs = [(by_id[i], by_id[t]) for i, t in twins.items() if t and i in by_id and t in by_id]
    base = [en for en, zh in pairs if zh["contains"]]
    return f"{sum(1 for en in base if en['contains'])}/{len(base)}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--off", action="store_true", help="ZHIKU_READER=false: the judge alone")
    ap.add_argument("--only", nargs="*", help="only these sets (names as printed)")
    ap.add_argument("--out", help="write every set's metrics to this JSON file")
    args = ap.parse_args()
    env = {**os.environ, "ZHIKU_READER": "false" if args.off else "true"}
    results: dict[str, dict] = {}
    print("| set | answerable: answered / uncertain / not found | unanswerable: answered / uncertain / not found | "
          "answer_contains | citation precision | reader ms p50 / p95 | first token p50 |")
    print("|---|---|---|---|---|---|---|")
    for name, argv in sets().items():
        if args.only and not any(o in name for o in args.only):
            continue
        if "--files" in argv:
            _ebike_files()
        m = run(argv, env)
        results[name] = m
        if "--followups" in argv:
            v = m["verdicts"] or {}
            print(f"| {name} ({m['pairs']} pairs) | holds the answer {m['holds_answer']} | wrong and answered "
                  f"{m['wrong_answered']} | verdicts {v.get('answered', 0):.3f} / {v.get('uncertain', 0):.3f} / "
                  f"{v.get('not_found', 0):.3f} | | {m['reader_ms_p50']} / {m['reader_ms_p95']} | |", flush=True)
            continue

        def cell(shares: dict | None) -> str:
            return "—" if not shares else " / ".join(f"{shares.get(k, 0):.3f}" for k in ("answered", "uncertain", "not_found"))

        extra = ""
        if name == "specs-zh":
            extra = f" (English twins holding the answer where the Chinese one does: {_english(m, Path(argv[3]))})"
        print(f"| {name} ({m['answerable']} + {m['unanswerable']}) | {cell(m['verdicts']['answerable'])} | "
              f"{cell(m['verdicts']['unanswerable'])} | {m['answer_contains']}{extra} | {m['citation_precision']} | "
              f"{m.get('reader_ms_p50')} / {m.get('reader_ms_p95')} | {m['first_token_ms_p50']} |", flush=True)
    for name, kb in OFFTOPIC.items():
        if args.only and not any(o in name for o in args.only):
            continue
        argv = sets()[name]
        for off in ("offtopic-zh", "chitchat-zh"):
            m = run([*argv[:2], "--queries", str(HELD / off / "queries.jsonl"), "--kb", kb], env, "kb_eval")
            results[f"{name} × {off}"] = m
            print(f"| {off} asked of {name} | not found {m.get('abstain_rate')} | | | | | |", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
