"""The reader's cost per question: CPU and wall time of the read stage, sequential, on real questions and passages.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_reader.py [--questions 200] [--threads 1] [--int8]

For each question of devdata/heldout/apisix-zh, specs-zh and vant-zh (the answerable ones), the stage reads what search
hands it: three candidates (the relevant passage and the two that share most characters with the question), each
cut into units and the best ``reading.UNITS_PER_CANDIDATE`` read. Prints p50/p95 of process CPU time and wall time
of ``reading.read`` (the first call, which loads PyTorch and the weights, is not counted) and the load time; with
``--int8`` the same for the int8 reader, then both readers' scores on every window of every candidate side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from knowledge.reader.windows import overlap  # noqa: E402 - after the sys.path line (repo root)
from knowledge.retrieval import reading  # noqa: E402 - after the sys.path line (repo root)
from knowledge.retrieval.types import Candidate  # noqa: E402 - after the sys.path line (repo root)


def cases(limit: int) -> list[tuple[str, list[Candidate]]]:
    out = []
    for name in ("apisix-zh", "specs-zh", "vant-zh"):
        folder = ROOT / "devdata" / "heldout" / name
        corpus = [json.loads(x) for x in (folder / "corpus.jsonl").open(encoding="utf-8")]
        by_id = {p["id"]: p for p in corpus}
        for line in (folder / "queries.jsonl").open(encoding="utf-8"):
            q = json.loads(line)
            if not q.get("relevant") or q["relevant"][0] not in by_id:
                continue
            first = by_id[q["relevant"][0]]
            others = sorted((p for p in corpus if p is not first), key=lambda p: -overlap(q["text"], p["text"][:300]))[:2]
            cands = [Candidate(chunk_id=i, kb_id=1, document_id=i, content=p["text"][:800], title=p.get("title", ""))
                     for i, p in enumerate([first, *others])]
            out.append((q["text"], cands))
    return out[:limit]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    ap.add_argument("--int8", action="store_true", help="also the int8 reader: its CPU, and its scores beside float32's "
                    "on every window (largest difference, decisions that change at the reader's lines)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from knowledge.reader import artefact, runtime

    path = artefact.ensure(ROOT / "var" / "models")
    todo = cases(args.questions)
    readers = [("float32", False)] + ([("int8", True)] if args.int8 else [])
    load = os.getloadavg()
    print(f"questions {len(todo)} (apisix-zh, specs-zh, vant-zh), threads {args.threads}, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    scored: dict[str, list[float]] = {}
    for label, int8 in readers:
        started = time.perf_counter()
        reader = runtime.Reader(path, int8=int8)
        load_ms = (time.perf_counter() - started) * 1000
        reading.read(reader, todo[0][0], [Candidate(**{**c.__dict__}) for c in todo[0][1]])
        cpu, wall, windows = [], [], []
        for question, cands in todo:
            fresh = [Candidate(**{**c.__dict__}) for c in cands]
            windows.append(sum(len(reading.windows_of(question, c)) for c in fresh[: reading.READ_CANDIDATES]))
            c0, w0 = time.process_time(), time.perf_counter()
            reading.read(reader, question, fresh)
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
        print(f"{label}: read stage CPU ms p50 {np.percentile(cpu, 50):.1f} p95 {np.percentile(cpu, 95):.1f}; "
              f"wall ms p50 {np.percentile(wall, 50):.1f} p95 {np.percentile(wall, 95):.1f}; "
              f"windows per question p50 {np.percentile(windows, 50):.0f} (max {max(windows)}); load {load_ms:.0f} ms")
        if args.int8:  # every window of every candidate, for the comparison
            scored[label] = [score for question, cands in todo for c in cands
                             for score in reader.read(question, [(c.title or "", text) for _, _, text in
                                                                 reading.windows_of(question, c)])]
    if args.int8:
        a, b = np.array(scored["float32"]), np.array(scored["int8"])
        flips = {line: int(((a >= line) != (b >= line)).sum()) for line in (0.5, 0.9)}
        print(f"int8 beside float32 on {len(a)} windows: largest difference {np.abs(a - b).max():.4f}, mean "
              f"{np.abs(a - b).mean():.5f}; decisions that change at 0.5: {flips[0.5]}, at 0.9: {flips[0.9]}")

if __name__ == "__main__":
    main()
