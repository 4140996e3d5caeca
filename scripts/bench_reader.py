"""The reader's cost per question: CPU and wall time of the read stage, sequential, on real questions and passages.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_reader.py [--questions 200] [--threads 1]

For each question of devdata/heldout/apisix-zh and specs-zh (the answerable ones), the stage reads what search
hands it: three candidates (the relevant passage and the two that share most characters with the question), each
cut into units and the best ``reading.UNITS_PER_CANDIDATE`` read. Prints p50/p95 of process CPU time and wall time
of ``reading.read`` (the first call, which loads PyTorch and the weights, is not counted) and the load time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from knowledge.reader.windows import overlap  # noqa: E402
from knowledge.retrieval import reading  # noqa: E402
from knowledge.retrieval.types import Candidate  # noqa: E402


def cases(limit: int) -> list[tuple[str, list[Candidate]]]:
    out = []
    for name in ("apisix-zh", "specs-zh"):
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
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from knowledge.reader import artefact, runtime

    started = time.perf_counter()
    reader = runtime.Reader(artefact.ensure(ROOT / "var" / "models"))
    load_ms = (time.perf_counter() - started) * 1000
    todo = cases(args.questions)
    reading.read(reader, todo[0][0], [Candidate(**{**c.__dict__}) for c in todo[0][1]])
    cpu, wall, windows = [], [], []
    for question, cands in todo:
        fresh = [Candidate(**{**c.__dict__}) for c in cands]
        windows.append(sum(len(reading.windows_of(question, c)) for c in fresh[: reading.READ_CANDIDATES]))
        c0, w0 = time.process_time(), time.perf_counter()
        reading.read(reader, question, fresh)
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    load = os.getloadavg()
    print(f"questions {len(todo)}, windows per question p50 {np.percentile(windows, 50):.0f} (max {max(windows)}), "
          f"threads {args.threads}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"read stage CPU ms p50 {np.percentile(cpu, 50):.1f} p95 {np.percentile(cpu, 95):.1f}; "
          f"wall ms p50 {np.percentile(wall, 50):.1f} p95 {np.percentile(wall, 95):.1f}; first load {load_ms:.0f} ms")


if __name__ == "__main__":
    main()
