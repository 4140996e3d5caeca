import json, re, subprocess, sys
GIT = "/work/.mirror/apache+rocketmq-site/repo"
COMMIT = "7c16875ef20b889a5ffad003630391fdc84804e7"
FILES = """docs/00-introduction/01whychoose.md
docs/00-introduction/02whatis.md
docs/01-quickstart/01quickstart.md
docs/01-quickstart/02quickstartWithDocker.md
docs/01-quickstart/03quickstartWithDockercompose.md
docs/01-quickstart/04quickstartWithHelmInKubernetes.md
docs/02-producer/01concept1.md
docs/02-producer/02message1.md
docs/02-producer/03message2.md
docs/02-producer/04message3.md
docs/02-producer/05message4.md
docs/02-producer/06message5.md
docs/03-consumer/01concept2.md
docs/03-consumer/02push.md
docs/03-consumer/03pull.md
docs/04-deployment/01deploy.md
docs/04-deployment/03Dashboard.md
docs/05-bestPractice/01bestpractice.md
docs/05-bestPractice/02dledger.md
docs/05-bestPractice/03messagetra.md
docs/05-bestPractice/04access.md
docs/05-bestPractice/05JVMOS.md
docs/05-bestPractice/06log.md
docs/05-bestPractice/07subscribe.md
docs/05-bestPractice/08FAQ.md
docs/06-parameterConfiguration/01local.md
docs/06-parameterConfiguration/02server.md""".split("\n")
MAXLEN = 1500
MINLEN = 150

def show(f):
    return subprocess.run(["git", f"--git-dir={GIT}", "show", f"{COMMIT}:{f}"], capture_output=True, text=True, check=True).stdout

def clean_lines(src):
    src = src.replace("\r\n", "\n")
    if src.startswith("---"):
        end = src.find("\n---", 3)
        src = src[end + 4:]
    out, incode = [], False
    for line in src.split("\n"):
        if line.strip().startswith("```"):
            incode = not incode
            out.append((line.strip(), True)); continue
        if incode:
            out.append((line, True)); continue
        if re.match(r"^\s*import .* from ", line):
            continue
        line = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", line)
        line = re.sub(r"<img[^>]*/?>", "", line)
        line = re.sub(r"<(https?://[^>\s]+)>", r"\1", line)
        line = re.sub(r"\s*:::\s*$", "", line)
        line = re.sub(r"</?[A-Za-z][^>]*>", "", line)
        line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)
        m = re.match(r"^\s*:::\s*(\w+)?\s*(.*)$", line)
        if m:
            line = m.group(2) or ""
        if line.lstrip().startswith("|"):
            line = re.sub(r" {2,}", " ", line.strip())
            line = re.sub(r"\| ?-{3,} ?", "|---", line)
        out.append((line.rstrip(), False))
    return out

def sections(lines):
    secs, cur_head, cur = [], None, []
    for line, code in lines:
        m = None if code else re.match(r"^(#{1,4})\s+(.*)$", line)
        if m:
            if cur_head is not None or any(l.strip() for l in cur):
                secs.append((cur_head, cur))
            cur_head = (len(m.group(1)), m.group(2).replace("**", "").strip().strip("#").strip()); cur = []
        else:
            cur.append(line)
    secs.append((cur_head, cur))
    return secs

def norm(text):
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(text)).strip()
    text = text.replace("**", "").replace("\xa0", " ").replace("\u200b", "").replace("\u3000", " ")
    return text

def split_long(text):
    if len(text) <= MAXLEN: return [text]
    paras, buf, incode, parts = text.split("\n"), [], False, []
    blocks, cur = [], []
    for l in paras:
        if l.strip().startswith("```"): incode = not incode
        cur.append(l)
        if not incode and l.strip() == "":
            blocks.append("\n".join(cur)); cur = []
    if cur: blocks.append("\n".join(cur))
    out, acc = [], ""
    for b in blocks:
        if acc and len(acc) + len(b) > MAXLEN:
            out.append(acc.strip()); acc = ""
        acc += b + "\n"
    if acc.strip(): out.append(acc.strip())
    # second pass: split still-long table blocks by lines
    res = []
    for o in out:
        if len(o) <= MAXLEN * 1.6: res.append(o); continue
        lines, acc, header = o.split("\n"), "", []
        tl = [l for l in lines if l.startswith("|")]
        header = tl[:2] if len(tl) > 2 and set(tl[1].replace("|", "").strip()) <= set("-: ") else []
        for l in lines:
            if acc and len(acc) + len(l) > MAXLEN:
                res.append(acc.strip()); acc = ("\n".join(header) + "\n") if header and l.startswith("|") else ""
            acc += l + "\n"
        if acc.strip(): res.append(acc.strip())
    merged = []
    for r in res:
        if merged and (len(r) < 250 or len(merged[-1]) < 250) and len(merged[-1]) + len(r) < MAXLEN * 1.4:
            merged[-1] = merged[-1] + "\n" + r
        else:
            merged.append(r)
    return merged

passages, n = [], 0
srcmap = []
for f in FILES:
    lines = clean_lines(show(f))
    secs = sections(lines)
    doc_title = None
    for h, body in secs:
        if h and h[0] == 1: doc_title = h[1]; break
    if doc_title is None: doc_title = f.split("/")[-1]
    pend_heads, pend_text = [], ""
    items = []
    for h, body in secs:
        head = h[1] if h else doc_title
        t = norm(body)
        block = (("#" * h[0] + " " + head + "\n") if h and h[0] > 1 else "") + t
        pend_heads.append(head); pend_text += ("\n\n" if pend_text else "") + block.strip()
        if len(re.sub(r"\s", "", pend_text)) >= MINLEN:
            items.append((pend_heads, pend_text)); pend_heads, pend_text = [], ""
    if pend_text.strip():
        if items and len(re.sub(r"\s","",pend_text)) < MINLEN:
            hs, tx = items[-1]; items[-1] = (hs + pend_heads, tx + "\n\n" + pend_text)
        else: items.append((pend_heads, pend_text))
    for heads, text in items:
        heads = [x for i, x in enumerate(heads) if x not in heads[:i]]
        title = doc_title + " › " + " / ".join(heads)
        for part in split_long(text):
            n += 1
            passages.append({"id": f"manual-{n}", "title": title, "text": part})
            srcmap.append((f"manual-{n}", f))
with open("/work/main/devdata/manual-zh/corpus.jsonl", "w") as fo:
    for p in passages: fo.write(json.dumps(p, ensure_ascii=False) + "\n")
json.dump(srcmap, open("/work/main/devdata/_build/manual_srcmap.json", "w"))
lens = [len(p["text"]) for p in passages]
print(len(passages), min(lens), sum(lens)//len(lens), max(lens))
