import json, re, glob
out, n = [], 0
for f in sorted(glob.glob("/work/main/devdata/_build/policy_src_*.txt")):
    doc, head, buf = None, None, []
    def flush():
        global n
        if head and buf:
            n += 1
            out.append({"id": f"policy-{n}", "title": f"{doc} › {head}", "text": "\n".join(buf).strip()})
    for line in open(f, encoding="utf-8").read().split("\n"):
        if line.startswith("@@ "): doc = line[3:].strip(); continue
        if line.startswith("## "):
            flush(); head, buf = line[3:].strip(), []; continue
        if line.strip(): buf.append(line.rstrip())
    flush()
with open("/work/main/devdata/policy-zh/corpus.jsonl", "w") as fo:
    for p in out: fo.write(json.dumps(p, ensure_ascii=False) + "\n")
lens = [len(p["text"]) for p in out]
print(len(out), min(lens), sum(lens)//len(lens), max(lens))
for p in out:
    if len(p["text"]) < 100 or len(p["text"]) > 500: print(p["id"], len(p["text"]), p["title"])
