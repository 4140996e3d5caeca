"""Validate devdata sets: ids unique, relevant ids exist, answer spans are substrings of a relevant passage."""
import json, sys, pathlib
root = pathlib.Path(__file__).parent
ok = True
for d in ["manual-zh", "policy-zh"]:
    corpus = [json.loads(l) for l in open(root / d / "corpus.jsonl", encoding="utf-8")]
    ids = [p["id"] for p in corpus]
    byid = {p["id"]: p for p in corpus}
    qs = [json.loads(l) for l in open(root / d / "queries.jsonl", encoding="utf-8")]
    errs = []
    if len(ids) != len(set(ids)): errs.append("duplicate passage ids")
    if len({q["id"] for q in qs}) != len(qs): errs.append("duplicate query ids")
    if len({q["text"] for q in qs}) != len(qs): errs.append("duplicate query texts")
    for p in corpus:
        if set(p) != {"id", "title", "text"} or not p["text"].strip() or " › " not in p["title"]: errs.append(f"bad passage {p['id']}")
    for q in qs:
        if set(q) != {"id", "text", "relevant", "answers"}: errs.append(f"bad keys {q['id']}")
        if bool(q["relevant"]) != bool(q["answers"]): errs.append(f"relevant/answers mismatch {q['id']}")
        for r in q["relevant"]:
            if r not in byid: errs.append(f"{q['id']}: unknown passage {r}")
        for a in q["answers"]:
            if not any(a in byid[r]["text"] for r in q["relevant"] if r in byid): errs.append(f"{q['id']}: span not found: {a}")
        for r in q["relevant"]:
            if r in byid and not any(a in byid[r]["text"] for a in q["answers"]): errs.append(f"{q['id']}: {r} holds no answer span")
    ans = sum(1 for q in qs if q["relevant"])
    lens = [len(p["text"]) for p in corpus]
    print(f"{d}: {len(corpus)} passages ({min(lens)}-{max(lens)} chars, mean {sum(lens)//len(lens)}), {len(qs)} queries: {ans} answerable, {len(qs)-ans} unanswerable; {len(errs)} errors")
    for e in errs: print("  ", e)
    ok &= not errs
sys.exit(0 if ok else 1)
