import json, sys, importlib.util, re
name, prefix = sys.argv[1], sys.argv[2]   # module file, id prefix (manual/policy)
spec = importlib.util.spec_from_file_location("q", sys.argv[3]); q = importlib.util.module_from_spec(spec); spec.loader.exec_module(q)
corpus = {json.loads(l)["id"]: json.loads(l) for l in open(f"/work/main/devdata/{name}/corpus.jsonl")}
rows = []
for t, rel, ans in q.A:
    rows.append({"text": t, "relevant": [f"{prefix}-{r}" for r in rel], "answers": ans})
for t in q.U:
    rows.append({"text": t, "relevant": [], "answers": []})
# interleave deterministically so unanswerables are spread out
import hashlib
rows.sort(key=lambda r: hashlib.md5(r["text"].encode()).hexdigest())
with open(f"/work/main/devdata/{name}/queries.jsonl", "w") as fo:
    for i, r in enumerate(rows, 1):
        fo.write(json.dumps({"id": f"{prefix}-q{i:03d}", **r}, ensure_ascii=False) + "\n")
# report: for each answer span, passages that contain it but are not listed
for r in rows:
    for a in r["answers"]:
        hits = [pid for pid, p in corpus.items() if a in p["text"]]
        extra = [h for h in hits if h not in r["relevant"]]
        if extra and len(a) > 3: print("EXTRA", r["text"], "|", a, "->", extra[:10])
        if not any(a in corpus[x]["text"] for x in r["relevant"] if x in corpus): print("MISSING", r["text"], "|", a)
    for x in r["relevant"]:
        if not any(a in corpus[x]["text"] for a in r["answers"]): print("NOSPAN", r["text"], x)
print(len(q.A), len(q.U))
