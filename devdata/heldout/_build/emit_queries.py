"""Write devdata/heldout/<set>-zh/queries.jsonl from <set>_queries.py and check it.

Usage: python emit_queries.py apisix|vant

Checks (exit 1 on any error): every relevant id exists; every answer span is a
substring of at least one relevant passage; every relevant passage holds at
least one span; ids and texts unique.  Reports (not errors) passages outside
`relevant` that also contain a span of 4+ characters, to be read by hand.
Queries are ordered by a hash of their text so answerable and unanswerable
ones are interleaved.
"""
import hashlib
import importlib.util
import json
import pathlib
import sys

name = sys.argv[1]
here = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("q", here / f"{name}_queries.py")
q = importlib.util.module_from_spec(spec)
spec.loader.exec_module(q)
setdir = here.parent / f"{name}-zh"
corpus = {p["id"]: p for p in map(json.loads, open(setdir / "corpus.jsonl", encoding="utf-8"))}

rows = [{"text": t, "relevant": [f"{name}-{r}" for r in rel], "answers": ans} for t, rel, ans in q.A]
rows += [{"text": t, "relevant": [], "answers": []} for t in q.U]
rows.sort(key=lambda r: hashlib.md5(r["text"].encode()).hexdigest())

errors = []
if len({r["text"] for r in rows}) != len(rows):
    errors.append("duplicate question text")
for r in rows:
    for pid in r["relevant"]:
        if pid not in corpus:
            errors.append(f"unknown passage {pid}: {r['text']}")
    if r["relevant"] and not 1 <= len(r["answers"]) <= 3:
        errors.append(f"needs 1-3 answer spans: {r['text']}")
    rel = [corpus[p]["text"] for p in r["relevant"] if p in corpus]
    for a in r["answers"]:
        if not any(a in t for t in rel):
            errors.append(f"span not in any relevant passage: {r['text']} | {a}")
    for pid in r["relevant"]:
        if pid in corpus and not any(a in corpus[pid]["text"] for a in r["answers"]):
            errors.append(f"relevant passage holds no span: {r['text']} | {pid}")
    for a in r["answers"]:
        extra = [pid for pid, p in corpus.items() if a in p["text"] and pid not in r["relevant"]]
        if extra and len(a) >= 4:
            print("EXTRA", r["text"], "|", a, "->", extra[:12])

with open(setdir / "queries.jsonl", "w", encoding="utf-8") as fo:
    for i, r in enumerate(rows, 1):
        fo.write(json.dumps({"id": f"{name}-q{i:03d}", **r}, ensure_ascii=False) + "\n")
print(f"{name}: {len(q.A)} answerable, {len(q.U)} unanswerable, {len(errors)} errors")
for e in errors:
    print("ERROR", e)
sys.exit(1 if errors else 0)
