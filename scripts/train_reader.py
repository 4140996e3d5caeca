"""Train the reader: the first layers of the bundled multilingual-e5-small, fine-tuned as a cross-encoder that says
whether a short window of a passage states the answer to a question (knowledge/reader/, docs/relevance.md).

    .venv/bin/python scripts/train_reader.py            # build the pairs, train (resumes), evaluate, write the delta
    .venv/bin/python scripts/train_reader.py --eval     # held-out figures of the shipped delta only

Deterministic (one seed, one data order) and resumable: a checkpoint is written every ``--every`` steps under
``var/reader-train/`` and a second run goes on from it. Runs on the CPU; two threads.

Data (``pairs``): for each question with an answer span, every unit of its passage (``windows.units``) is a pair,
positive when it contains an answer string; two units of the best-ranked *other* passage (BM25 over the set's
corpus, jieba tokens: the platform's keyword scorer) are hard negatives; a question the set marks unanswerable
gives the best BM25 passage's units as negatives. Sets: CMRC 2018 dev, DRCD dev (../shared/bench), and
devdata's manual-zh, policy-zh, faq-zh. **Held out, never trained on**: CMRC and DRCD passages whose CRC32 of the
id is ≡ 0 (mod 5) and every question about them; devdata questions whose id's CRC32 is ≡ 0 (mod 5); and the
whole of docs-zh/faq, devdata/heldout (apisix, vant, ebike) and every follow-up set.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from knowledge.reader import artefact, windows  # noqa: E402 - after the sys.path line (repo root)
from knowledge.reader.tokenizer import fast_tokenizer  # noqa: E402 - after the sys.path line (repo root)

BENCH = ROOT.parent / "shared" / "bench"
SETS = {
    "cmrc2018": (BENCH / "cmrc2018" / "dev", "passage"),
    "drcd": (BENCH / "drcd" / "dev", "passage"),
    "manual-zh": (ROOT / "devdata" / "manual-zh", "query"),
    "policy-zh": (ROOT / "devdata" / "policy-zh", "query"),
    "faq-zh": (ROOT / "devdata" / "faq-zh", "query"),
}
MAX_TOKENS = 128
SEED = 20261203

# Spec sheets written by a template (``table_pairs``): a table's header plus a row asked about one of its cells,
# the pairs a product's own documents give. Product kinds, attributes (Chinese, English, a value maker) and model
# prefixes are none of those in devdata/heldout (no robot vacuums, laptops, water purifiers, machine tools, e-bikes).
TABLE_KINDS = [
    ("电动牙刷", [
        ("续航", "battery life", "{}天", (20, 90)), ("充电时间", "charging time", "{}小时", (2, 16)),
        ("重量", "weight", "{}克", (80, 160)), ("售价", "price", "{}元", (99, 899)),
        ("刷头转速", "brush speed", "{}次/分钟", (20000, 42000)),
    ]),
    ("空气净化器", [
        ("洁净空气量", "clean air delivery rate", "{}立方米/小时", (200, 900)), ("适用面积", "suitable area", "{}平方米", (15, 90)),
        ("运行噪音", "noise", "{}分贝", (28, 66)), ("额定功率", "rated power", "{}瓦", (20, 120)),
        ("售价", "price", "{}元", (699, 4999)),
    ]),
    ("投影仪", [
        ("亮度", "brightness", "{}流明", (300, 3000)), ("投射比", "throw ratio", "{}:1", (1, 3)),
        ("重量", "weight", "{}千克", (1, 9)), ("售价", "price", "{}元", (1999, 12999)),
        ("风扇噪音", "fan noise", "{}分贝", (24, 40)),
    ]),
    ("无线路由器", [
        ("无线速率", "wireless speed", "{}Mbps", (1200, 9600)), ("天线数量", "number of antennas", "{}根", (2, 8)),
        ("网口数量", "number of ports", "{}个", (3, 6)), ("售价", "price", "{}元", (129, 1999)),
        ("功耗", "power consumption", "{}瓦", (8, 40)),
    ]),
    ("显示器", [
        ("屏幕尺寸", "screen size", "{}英寸", (21, 34)), ("刷新率", "refresh rate", "{}Hz", (60, 240)),
        ("亮度", "brightness", "{}尼特", (250, 1000)), ("重量", "weight", "{}千克", (3, 9)),
        ("售价", "price", "{}元", (799, 6999)),
    ]),
    ("激光打印机", [
        ("打印速度", "print speed", "{}页/分钟", (18, 60)), ("纸盒容量", "paper tray capacity", "{}张", (150, 550)),
        ("额定功率", "rated power", "{}瓦", (300, 900)), ("整机重量", "weight", "{}千克", (6, 25)),
        ("售价", "price", "{}元", (999, 5999)),
    ]),
    ("电热水壶", [
        ("容量", "capacity", "{}升", (1, 3)), ("额定功率", "rated power", "{}瓦", (1500, 2200)),
        ("保温时长", "keep-warm time", "{}小时", (2, 24)), ("售价", "price", "{}元", (59, 599)),
        ("重量", "weight", "{}克", (800, 1600)),
    ]),
    ("储能电源", [
        ("电池容量", "battery capacity", "{}瓦时", (300, 3000)), ("输出功率", "output power", "{}瓦", (300, 3000)),
        ("充满时间", "full charge time", "{}小时", (1, 8)), ("重量", "weight", "{}千克", (4, 30)),
        ("售价", "price", "{}元", (1299, 12999)),
    ]),
]
ZH_ASK = ["{m} 的{a}是多少？", "{m}{a}多少", "请问 {m} 的{a}是多少", "{m} 的{a}", "{m}的{a}是多少"]
EN_ASK = ["What is the {e} of the {m}?", "{m} {e}", "How about the {e} of {m}?", "what's the {e} of {m}"]


def _held_out(key: str) -> bool:
    return zlib.crc32(key.encode()) % 5 == 0


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def _norm(s: str) -> str:
    return "".join(s.split()).lower()


def pairs_of(name: str) -> list[dict]:
    """Every (question, window, label, split) of one set."""
    import jieba
    from rank_bm25 import BM25Okapi

    jieba.setLogLevel(60)
    folder, split_by = SETS[name]
    corpus = _load(folder / "corpus.jsonl")
    by_id = {p["id"]: p for p in corpus}
    bm25 = BM25Okapi([jieba.lcut_for_search((p.get("title") or "") + p["text"]) for p in corpus])
    rng = random.Random(SEED + zlib.crc32(name.encode()))
    out: list[dict] = []
    for q in _load(folder / "queries.jsonl"):
        rel = [r for r in q.get("relevant") or [] if r in by_id]
        answers = [a for a in q.get("answers") or [] if a.strip()]
        key = rel[0] if (split_by == "passage" and rel) else q["id"]
        split = "heldout" if _held_out(key) else "train"
        scores = bm25.get_scores(jieba.lcut_for_search(q["text"]))
        ranked = [corpus[i]["id"] for i in np.argsort(-scores)[:5]]
        others = [pid for pid in ranked if pid not in rel]

        def add(pid: str, label_from: list[str] | None, k: int | None, kind: str, *, q: dict = q, split: str = split) -> None:
            p = by_id[pid]
            us = windows.units(p["text"])
            idx = windows.pick(q["text"], us, k) if k else list(range(len(us)))
            for i in idx:
                label = int(bool(label_from) and any(_norm(a) in _norm(us[i].text) for a in label_from))
                out.append({"set": name, "qid": q["id"], "pid": pid, "unit": i, "kind": kind, "split": split,
                            "text": windows.reader_text(q["text"], p.get("title") or "", us[i].text),
                            "label": label})

        if rel and answers:
            for pid in rel[:1]:
                add(pid, answers, None, "gold")
            if others:
                add(others[0], [], 2, "other")
        elif not rel:
            if others:
                add(others[0], [], 4, "unanswerable")
    # keep at most 6 negatives of a gold passage per question (long passages would swamp the set)
    kept: list[dict] = []
    by_q: dict[str, list[dict]] = {}
    for ex in out:
        by_q.setdefault(ex["qid"], []).append(ex)
    for exs in by_q.values():
        gold_neg = [e for e in exs if e["kind"] == "gold" and not e["label"]]
        drop = set(id(e) for e in rng.sample(gold_neg, max(0, len(gold_neg) - 6))) if exs[0]["split"] == "train" else set()
        kept.extend(e for e in exs if id(e) not in drop)
    return kept


def table_pairs(n_tables: int = 400) -> list[dict]:
    """Spec sheets from ``TABLE_KINDS``: per table 3–4 models (random Latin prefix and number); per question, in
    Chinese or English, the asked model's row is positive, the other rows and a row of another table negative; a
    question about an attribute the table lacks has every row negative (about the product, not stating it)."""
    rng = random.Random(SEED + 7)
    out: list[dict] = []
    for t in range(n_tables):
        kind, attrs = TABLE_KINDS[t % len(TABLE_KINDS)]
        brand = rng.choice(["恒远", "青禾", "锐思", "北辰", "启明", "云杉", "拓维", "长风", "海澜", "光合"])
        prefix = "".join(rng.choice("ABCDEFGHJKLMNPRTVWXZ") for _ in range(rng.choice([1, 2, 2, 3])))
        dash = rng.choice(["", "-", ""])
        numbers = sorted(rng.sample(range(1, 99), 4)) if rng.random() < 0.5 else sorted(rng.sample(range(100, 999, 100), 4))
        models = [f"{prefix}{dash}{n}" for n in numbers[: rng.choice([3, 4])]]
        cols = rng.sample(attrs, rng.choice([3, 4]))
        header = "| 型号 | " + " | ".join(c[0] for c in cols) + " |"
        rows = {m: "| " + m + " | " + " | ".join(c[2].format(rng.randint(*c[3])) for c in cols) + " |" for m in models}
        title = f"{brand}{kind}参数表"
        split = "heldout" if _held_out(f"table-{t}") else "train"
        for k in range(4):
            english = rng.random() < 0.35
            m = rng.choice(models)
            missing = k == 3
            attr = rng.choice([a for a in attrs if a not in cols] or attrs) if missing else rng.choice(cols)
            question = (rng.choice(EN_ASK).format(e=attr[1], m=m) if english else rng.choice(ZH_ASK).format(a=attr[0], m=m))
            qid = f"table-{t}-{k}"
            for other in models:
                out.append({"set": "tables", "qid": qid, "pid": f"table-{t}", "unit": models.index(other),
                            "kind": "unanswerable" if missing else "gold", "split": split,
                            "text": windows.reader_text(question, title, f"{header}\n{rows[other]}"),
                            "label": int(other == m and not missing)})
    return out


def build_pairs(cache: Path) -> list[dict]:
    if cache.exists():
        return _load(cache)
    tok = fast_tokenizer()
    rows: list[dict] = []
    for name in SETS:
        rows.extend(pairs_of(name))
    rows.extend(table_pairs())
    for r in rows:
        r["ids"] = tok.encode_query(r["text"], MAX_TOKENS)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(cache)
    return rows


def auc(labels: list[int], scores: list[float]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else float("nan")


def evaluate(net, rows: list[dict], pad: int) -> dict:
    import torch

    from knowledge.reader.training import batch

    net.eval()
    scores: list[float] = []
    with torch.inference_mode():
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]["ids"]))
        out = [0.0] * len(rows)
        for s in range(0, len(order), 64):
            chunk = order[s : s + 64]
            ids, mask = batch([rows[i]["ids"] for i in chunk], pad)
            for i, v in zip(chunk, torch.sigmoid(net(ids, mask)).tolist(), strict=True):
                out[i] = v
        scores = out
    net.train()
    figures: dict = {"pairs": len(rows), "auc": auc([r["label"] for r in rows], scores)}
    per_set: dict[str, dict] = {}
    for name in sorted({r["set"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["set"] == name]
        # unit accuracy: of questions whose gold passage has a positive unit, the best-scored unit is positive
        by_q: dict[str, list[int]] = {}
        for i in idx:
            if rows[i]["kind"] == "gold":
                by_q.setdefault(rows[i]["qid"], []).append(i)
        hits = [rows[max(g, key=lambda i: scores[i])]["label"] for g in by_q.values() if any(rows[i]["label"] for i in g)]
        # question level: best window of an answerable question vs best window of an unanswerable one
        best: dict[str, tuple[int, float]] = {}
        for i in idx:
            q = rows[i]["qid"]
            lab = 1 if rows[i]["kind"] == "gold" and any(rows[j]["label"] for j in by_q.get(q, [])) else 0
            if rows[i]["kind"] == "unanswerable":
                lab = 0
            elif rows[i]["kind"] == "other":
                continue
            prev = best.get(q, (lab, 0.0))
            best[q] = (lab, max(prev[1], scores[i]))
        per_set[name] = {"pairs": len(idx), "auc": round(auc([rows[i]["label"] for i in idx], [scores[i] for i in idx]), 3),
                         "unit_accuracy": round(float(np.mean(hits)), 3) if hits else None,
                         "question_auc": round(auc([b[0] for b in best.values()], [b[1] for b in best.values()]), 3)}
    figures["sets"] = per_set
    return figures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=artefact.LAYERS)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--work", default=str(ROOT / "var" / "reader-train"))
    ap.add_argument("--eval", action="store_true", help="only print the shipped delta's held-out figures")
    ap.add_argument("--init", help="start from this checkpoint's network (a fresh optimizer: a second stage)")
    args = ap.parse_args()

    import torch

    from knowledge.reader.training import ReaderNet, batch, load_delta

    torch.manual_seed(SEED)
    torch.set_num_threads(int(os.environ.get("READER_THREADS", "2")))
    work = Path(args.work)
    rows = build_pairs(work / "pairs.jsonl")
    train = [r for r in rows if r["split"] == "train"]
    held = [r for r in rows if r["split"] == "heldout"]
    print(f"pairs: train {len(train)} ({sum(r['label'] for r in train)} positive), "
          f"held out {len(held)} ({sum(r['label'] for r in held)} positive)", flush=True)
    base = artefact.base_model(args.layers)
    tok = fast_tokenizer()
    net = ReaderNet(base, args.layers)
    if args.eval:
        load_delta(net)
        print(json.dumps(evaluate(net, held, tok.pad), ensure_ascii=False, indent=1))
        return

    steps_per_epoch = (len(train) + args.batch - 1) // args.batch
    total = int(steps_per_epoch * args.epochs)
    layer_params = [p for n, p in net.named_parameters() if p.requires_grad and not n.startswith("head")]
    opt = torch.optim.AdamW([{"params": layer_params, "lr": args.lr},
                             {"params": net.head.parameters(), "lr": 1e-2, "weight_decay": 0.0}], weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100) * max(0.0, 1 - s / total))
    ckpt = work / "ckpt.pt"
    step = 0
    if args.init and not ckpt.exists():
        net.load_state_dict(torch.load(args.init, weights_only=False)["net"])
        print(f"initialised from {args.init}", flush=True)
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        print(f"resumed at step {step}/{total}", flush=True)

    order: list[int] = []
    rng = random.Random(SEED)
    epoch = 0
    while len(order) < total * args.batch:
        perm = list(range(len(train)))
        rng.shuffle(perm)
        # length buckets of 50 batches, so that a batch pads little
        span = args.batch * 50
        for s in range(0, len(perm), span):
            perm[s : s + span] = sorted(perm[s : s + span], key=lambda i: len(train[i]["ids"]))
        order.extend(perm)
        epoch += 1
    batches = [order[s : s + args.batch] for s in range(0, total * args.batch, args.batch)]
    random.Random(SEED + 1).shuffle(batches)
    pos_weight = torch.tensor((len(train) - sum(r["label"] for r in train)) / max(1, sum(r["label"] for r in train)))
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight.sqrt())
    net.train()
    started, running = time.time(), 0.0
    while step < total:
        chunk = batches[step]
        ids, mask = batch([train[i]["ids"] for i in chunk], tok.pad)
        labels = torch.tensor([float(train[i]["label"]) for i in chunk])
        loss = loss_fn(net(ids, mask), labels)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        running = 0.98 * running + 0.02 * float(loss) if step > 1 else float(loss)
        if step % 20 == 0:
            rate = 20 * args.batch / max(1e-6, time.time() - started)
            started = time.time()
            print(f"step {step}/{total} loss {running:.4f} {rate:.1f} pairs/s", flush=True)
        if step % args.every == 0 or step == total:
            tmp = ckpt.with_suffix(".tmp")
            torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step}, tmp)
            tmp.replace(ckpt)
        if step % (args.every * 5) == 0 and step < total:
            figures = evaluate(net, held, tok.pad)
            print("held out:", json.dumps(figures, ensure_ascii=False), flush=True)
    figures = evaluate(net, held, tok.pad)
    print("held out:", json.dumps(figures, ensure_ascii=False, indent=1), flush=True)
    path = artefact.write_delta(net, figures=figures, data={"sets": sorted(SETS), "train_pairs": len(train),
                                                            "heldout_pairs": len(held), "seed": SEED,
                                                            "steps": total, "batch": args.batch, "lr": args.lr})
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
