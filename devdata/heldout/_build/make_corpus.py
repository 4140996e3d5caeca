"""Build a held-out documentation corpus from a fetched git snapshot.

Usage:  python make_corpus.py apisix /work/.mirror/apache+apisix/repo
        python make_corpus.py vant   /work/.mirror/youzan+vant/repo

Reads the listed Markdown files at the pinned commit (git show), writes
devdata/heldout/<set>-zh/corpus.jsonl next to this script's folder:
one passage per #/##/### section, title "document title › section heading";
front matter, MDX imports, HTML comments, images and HTML/JSX tags removed,
link targets dropped (link text kept), code blocks and Markdown tables kept.
Sections under MINLEN non-space characters are merged into the next one;
sections over MAXLEN characters are cut at blank lines (tables by rows, the
header repeated).
"""
import json
import pathlib
import re
import subprocess
import sys

SETS = {
    "apisix": {
        "commit": "f519a0f04ccfd4c13b5d06caf34bcde8c8593980",
        "base": "docs/zh/latest/",
        "files": """getting-started/README.md
getting-started/configure-routes.md
getting-started/load-balancing.md
getting-started/key-authentication.md
getting-started/rate-limiting.md
installation-guide.md
FAQ.md
terminology/route.md
terminology/upstream.md
terminology/consumer.md
terminology/plugin.md
terminology/service.md
terminology/global-rule.md
stream-proxy.md
tutorials/health-check.md
plugins/limit-req.md
plugins/proxy-rewrite.md
plugins/cors.md
plugins/ip-restriction.md
plugins/prometheus.md
plugins/redirect.md
plugins/gzip.md""".split("\n"),
    },
    "vant": {
        "commit": "29cd8c2119139851495550b9bf6bd5bd9f678b2f",
        "base": "packages/vant/",
        "files": """docs/markdown/quickstart.zh-CN.md
docs/markdown/advanced-usage.zh-CN.md
docs/markdown/faq.zh-CN.md
src/button/README.zh-CN.md
src/toast/README.zh-CN.md
src/dialog/README.zh-CN.md
src/field/README.zh-CN.md
src/form/README.zh-CN.md
src/popup/README.zh-CN.md
src/list/README.zh-CN.md
src/uploader/README.zh-CN.md
src/tab/README.zh-CN.md
src/picker/README.zh-CN.md
src/config-provider/README.zh-CN.md""".split("\n"),
    },
}
MAXLEN = 1500
MINLEN = 150


def show(git, commit, path):
    return subprocess.run(["git", f"--git-dir={git}", "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout


def front_matter_title(src):
    if src.startswith("---"):
        end = src.find("\n---", 3)
        m = re.search(r"^title:\s*(.+)$", src[:end], re.M)
        return (m.group(1).strip().strip("'\"") if m else None), src[end + 4:]
    return None, src


def clean_lines(src):
    """(line, in_code) pairs with markup removed outside code blocks."""
    # HTML comments (licence headers) outside code blocks; comments inside code are code
    parts = re.split(r"(^[ \t]*```.*?^[ \t]*```[^\n]*$)", src, flags=re.M | re.S)
    src = "".join(x if i % 2 else re.sub(r"<!--.*?-->", "", x, flags=re.S) for i, x in enumerate(parts))
    out, incode, intag = [], False, False
    for line in src.split("\n"):
        if line.strip().startswith("```"):
            incode = not incode
            out.append((line.strip(), True))
            continue
        if incode:
            out.append((line, True))
            continue
        if intag:                       # inside a multi-line JSX/HTML tag: skip to its '>'
            if ">" in line:
                intag = False
                line = line[line.index(">") + 1:]
            else:
                continue
        if re.match(r"^\s*import .* from ", line):
            continue
        spans = []                      # inline code is kept as written
        line = re.sub(r"(`+)(.+?)\1", lambda m: spans.append(m.group(0)) or f"\x00{len(spans) - 1}\x00", line)
        line = line.replace("\\<", "\x01").replace("\\>", "\x02")   # escaped, not a tag
        line = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", line)
        line = re.sub(r"<(https?://[^>\s]+)>", r"\1", line)
        line = re.sub(r"<br\s*/?>", " ", line)
        line = re.sub(r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>", "", line)
        m = re.search(r"<[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?$", line)
        if m:                           # a tag opened here and closed on a later line
            intag = True
            line = line[:m.start()]
        line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)
        line = line.replace("**", "")
        line = line.replace("\x01", "<").replace("\x02", ">")
        line = re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], line)
        m = re.match(r"^\s*:::\s*(\w+)?\s*(.*)$", line)
        if m:
            line = m.group(2) or ""
        if line.lstrip().startswith("|"):
            line = re.sub(r" {2,}", " ", line.strip())
            line = re.sub(r"\| ?:?-{3,}:? ?", "|---", line)
        out.append((line.rstrip(), False))
    return out


def sections(lines):
    secs, head, cur = [], None, []
    for line, code in lines:
        m = None if code else re.match(r"^(#{1,3})\s+(.*)$", line)
        if m:
            if head is not None or any(l.strip() for l in cur):
                secs.append((head, cur))
            head = (len(m.group(1)), m.group(2).replace("**", "").replace("`", "").strip().strip("#").strip())
            cur = []
        else:
            cur.append(line)
    secs.append((head, cur))
    return secs


def norm(lines):
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    for a, b in (("\xa0", " "), ("\u200b", ""), ("\u3000", " ")):
        text = text.replace(a, b)
    return text


def split_long(text):
    if len(text) <= MAXLEN:
        return [text]
    blocks, cur, incode = [], [], False
    for l in text.split("\n"):
        if l.strip().startswith("```"):
            incode = not incode
        cur.append(l)
        if not incode and l.strip() == "":
            blocks.append("\n".join(cur))
            cur = []
    if cur:
        blocks.append("\n".join(cur))
    out, acc = [], ""
    for b in blocks:
        if acc and len(acc) + len(b) > MAXLEN:
            out.append(acc.strip())
            acc = ""
        acc += b + "\n"
    if acc.strip():
        out.append(acc.strip())
    res = []                            # still-long tables: cut by rows, repeat the header
    for o in out:
        if len(o) <= MAXLEN * 1.6:
            res.append(o)
            continue
        lines, acc = o.split("\n"), ""
        tl = [l for l in lines if l.startswith("|")]
        header = tl[:2] if len(tl) > 2 and set(tl[1].replace("|", "").strip()) <= set("-: ") else []
        for l in lines:
            if acc and len(acc) + len(l) > MAXLEN:
                res.append(acc.strip())
                acc = ("\n".join(header) + "\n") if header and l.startswith("|") else ""
            acc += l + "\n"
        if acc.strip():
            res.append(acc.strip())
    merged = []
    for r in res:
        if merged and (len(r) < 250 or len(merged[-1]) < 250) and len(merged[-1]) + len(r) < MAXLEN * 1.4:
            merged[-1] = merged[-1] + "\n" + r
        else:
            merged.append(r)
    return merged


def build(name, git):
    cfg = SETS[name]
    passages, n = [], 0
    for f in cfg["files"]:
        fm_title, src = front_matter_title(show(git, cfg["commit"], cfg["base"] + f).replace("\r\n", "\n"))
        secs = sections(clean_lines(src))
        doc_title = next((h[1] for h, _ in secs if h and h[0] == 1), None) or fm_title or f
        items, pend_heads, pend_text = [], [], ""
        for h, body in secs:
            if h is None and not any(l.strip() for l in body):
                continue
            head = h[1] if h else doc_title
            t = norm(body)
            block = (("#" * h[0] + " " + head + "\n") if h and h[0] > 1 else "") + t
            pend_heads.append(head)
            pend_text += ("\n\n" if pend_text else "") + block.strip()
            if len(re.sub(r"\s", "", pend_text)) >= MINLEN:
                items.append((pend_heads, pend_text))
                pend_heads, pend_text = [], ""
        if pend_text.strip():
            if items:
                hs, tx = items[-1]
                items[-1] = (hs + pend_heads, tx + "\n\n" + pend_text)
            else:
                items.append((pend_heads, pend_text))
        for heads, text in items:
            heads = [x for i, x in enumerate(heads) if x not in heads[:i]]
            if len(heads) > 1 and heads[0] == doc_title:
                heads = heads[1:]
            title = doc_title + " › " + " / ".join(heads)
            for part in split_long(text):
                n += 1
                passages.append({"id": f"{name}-{n}", "title": title, "text": part})
    out = pathlib.Path(__file__).resolve().parent.parent / f"{name}-zh" / "corpus.jsonl"
    out.parent.mkdir(exist_ok=True)
    with open(out, "w", encoding="utf-8") as fo:
        for p in passages:
            fo.write(json.dumps(p, ensure_ascii=False) + "\n")
    lens = [len(p["text"]) for p in passages]
    print(f"{out}: {len(passages)} passages, {min(lens)}-{max(lens)} chars, mean {sum(lens) // len(lens)}")


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2])
