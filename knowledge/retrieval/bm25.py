"""Sparse BM25 index that scores exactly like ``rank_bm25.BM25Okapi`` (0.2.2), serialised without pickle.

idf(t) = ln(N - df + 0.5) - ln(df + 0.5), a negative one floored to epsilon * the mean idf over the whole vocabulary;
w(t, d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)); score(q, d) = Σ over q's tokens (repeats too) of idf * w.
Terms absent from the corpus contribute nothing. Layout: a term-major CSR matrix (rows = vocabulary, columns =
documents) of term frequencies plus each posting's precomputed ``w``: a query reads only its own terms' rows.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

from . import bm25_blob
from .bm25_blob import FORMAT_VERSION, MAGIC, IndexFormatError
from .bm25_build import build_postings

__all__ = ["FORMAT_VERSION", "MAGIC", "BM25Index", "IndexFormatError", "ListTerms", "TermTable"]

DocInput = tuple[int, Sequence[str]]
_W_STEP = 4_000_000  # postings whose w is computed at once


class BM25Index:
    """Immutable sparse BM25 index over tokenized docs, keyed by external int ids (chunk ids).

    Build with ``BM25Index.build``; update with ``with_changes``, which returns a
    new index scoring exactly as a full rebuild over the changed corpus would.
    """

    __slots__ = (
        "k1", "b", "epsilon", "ids", "n_docs", "avgdl", "average_idf",
        "_terms", "_indptr", "_cols", "_tf", "_doc_len", "_w", "_idf", "_id_order", "_sorted_ids", "_doc_norm",
    )

    def __init__(self, *, terms: list[str], ids: np.ndarray, doc_len: np.ndarray, indptr: np.ndarray,
                 cols: np.ndarray, tf: np.ndarray, k1: float, b: float, epsilon: float) -> None:
        """Low-level constructor over a ready CSR; use ``build``/``from_bytes`` instead."""
        self.k1, self.b, self.epsilon = float(k1), float(b), float(epsilon)
        self.ids = np.ascontiguousarray(ids, dtype=np.int64)
        self._doc_len = np.ascontiguousarray(doc_len, dtype=np.int64)
        self._indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self._cols = np.ascontiguousarray(cols, dtype=np.int32)
        self._tf = np.ascontiguousarray(tf, dtype=np.int32)
        self._terms: TermTable = ListTerms(terms)
        self.n_docs = int(self.ids.shape[0])
        self._id_order = np.argsort(self.ids, kind="stable")
        self._sorted_ids = self.ids[self._id_order]
        if self.n_docs > 1 and not np.all(np.diff(self._sorted_ids) > 0):
            raise ValueError("document ids must be unique")
        total = int(self._doc_len.sum())
        self.avgdl = total / self.n_docs if self.n_docs else 0.0

        # idf, exactly as BM25Okapi._calc_idf (math.log per term would be slower
        # and np.log is correctly rounded for these arguments).
        df = np.diff(self._indptr).astype(np.float64)
        idf = np.log(self.n_docs - df + 0.5) - np.log(df + 0.5)
        self.average_idf = float(idf.sum() / idf.shape[0]) if idf.shape[0] else 0.0
        idf[idf < 0] = self.epsilon * self.average_idf
        self._idf = idf

        self._doc_norm: np.ndarray | None = None
        self._w: np.ndarray | None = np.empty(self._tf.shape[0], dtype=np.float64)
        for start in range(0, self._tf.shape[0], _W_STEP):  # a step at a time: no corpus-sized temporaries
            end = min(start + _W_STEP, self._tf.shape[0])
            self._w[start:end] = self._saturation(start, end)

    def _saturation(self, start: int, end: int) -> np.ndarray:
        """``w`` of postings start..end, written as rank_bm25 writes it so the floats agree (same operations, same order)."""
        if end <= start:
            return np.zeros(0, dtype=np.float64)
        tf_f = self._tf[start:end].astype(np.float64)
        cols = self._cols[start:end]
        norm: np.ndarray = self._doc_norm[cols] if self._doc_norm is not None else self.doc_norm(self._doc_len[cols])
        w: np.ndarray = tf_f * (self.k1 + 1) / (tf_f + norm)  # a stored doc_norm: the same floats, fewer operations
        return w

    def doc_norm(self, doc_len: np.ndarray) -> np.ndarray:
        """k1 * (1 - b + b * |d| / avgdl) for these document lengths."""
        return self.k1 * (1 - self.b + self.b * doc_len.astype(np.float64) / self.avgdl)

    @classmethod
    def from_state(cls, *, terms: TermTable, arrays: dict[str, np.ndarray], k1: float, b: float, epsilon: float,
                   avgdl: float, average_idf: float) -> BM25Index:
        """An index over ready arrays (``state_arrays``; bm25_file.py maps them), taken as they are: no copy.

        Optional: w (without it, a query computes its postings' w: the same floats), doc_norm.
        """
        self = cls.__new__(cls)
        self.k1, self.b, self.epsilon = float(k1), float(b), float(epsilon)
        self.avgdl, self.average_idf = float(avgdl), float(average_idf)
        self._terms = terms
        self.ids, self._doc_len, self._indptr = arrays["ids"], arrays["doc_len"], arrays["indptr"]
        self._cols, self._tf, self._w, self._idf = arrays["cols"], arrays["tf"], arrays.get("w"), arrays["idf"]
        self._id_order, self._sorted_ids, self._doc_norm = arrays["id_order"], arrays["sorted_ids"], arrays.get("doc_norm")
        self.n_docs = int(self.ids.shape[0])
        return self

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The arrays ``from_state`` takes (w left out): scoring from them gives exactly this index's floats."""
        return {"ids": self.ids, "doc_len": self._doc_len, "indptr": self._indptr, "cols": self._cols,
                "tf": self._tf, "idf": self._idf, "id_order": self._id_order, "sorted_ids": self._sorted_ids}

    @property
    def terms(self) -> TermTable:
        return self._terms

    def positions(self, doc_ids: Iterable[int]) -> np.ndarray:
        """Column of each id in ``self.ids``; -1 for an id not indexed."""
        wanted = np.fromiter((int(i) for i in doc_ids), dtype=np.int64)
        if self.n_docs == 0 or wanted.shape[0] == 0:
            return np.full(wanted.shape[0], -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._sorted_ids, wanted), self.n_docs - 1)
        return np.where(self._sorted_ids[at] == wanted, self._id_order[at], -1).astype(np.int64)

    # --- building ---------------------------------------------------------------

    @classmethod
    def build(
        cls, docs: Iterable[DocInput], *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
    ) -> BM25Index:
        """Index ``(doc_id, tokens)`` pairs; ids must be unique. Counted inside a memory bound (bm25_build.py)."""
        postings = build_postings(docs)
        return cls(terms=postings.terms, ids=postings.ids, doc_len=postings.lengths, indptr=postings.indptr,
                   cols=postings.cols, tf=postings.tf, k1=k1, b=b, epsilon=epsilon)

    def with_changes(
        self, *, remove_ids: Iterable[int] = (), add_docs: Iterable[DocInput] = ()
    ) -> BM25Index:
        """A new index over this corpus minus ``remove_ids`` plus ``add_docs``.

        Scores equal a full ``build`` over the resulting corpus (documents keep
        their relative order; added ones go last). Unknown ``remove_ids`` are
        ignored, so a repeated update is harmless; adding an id that stays in
        the index raises ``ValueError`` (remove it in the same call to replace
        it). Only the added documents are counted in Python; the rest is array
        work on the stored postings.
        """
        # Long: one pass of array steps (drop, renumber, add, prune terms, re-sort) that share their arrays.
        keep = np.ones(self.n_docs, dtype=bool)
        pos = self.positions(set(remove_ids))
        keep[pos[pos >= 0]] = False

        # Surviving postings, columns renumbered to the surviving documents.
        new_col_of_old = np.cumsum(keep, dtype=np.int64) - 1
        posting_keep = keep[self._cols]
        rows = np.repeat(np.arange(self.n_terms, dtype=np.int64), np.diff(self._indptr))[posting_keep]
        cols = new_col_of_old[self._cols[posting_keep]]
        tf = self._tf[posting_keep].astype(np.int64)
        ids = list(self.ids[keep].tolist())
        lengths = list(self._doc_len[keep].tolist())

        vocab = {t: i for i, t in enumerate(self._terms.as_list())}
        add_rows: list[int] = []
        add_cols: list[int] = []
        add_tf: list[int] = []
        kept_ids = set(ids)
        for doc_id, tokens in add_docs:
            doc_id = int(doc_id)
            if doc_id in kept_ids:
                raise ValueError(f"document {doc_id} is already indexed; remove it in the same call to replace it")
            kept_ids.add(doc_id)
            col = len(ids)
            ids.append(doc_id)
            lengths.append(len(tokens))
            counts: dict[int, int] = {}
            for t in tokens:
                term = vocab.setdefault(t, len(vocab))
                counts[term] = counts.get(term, 0) + 1
            add_rows.extend(counts)
            add_cols.extend([col] * len(counts))
            add_tf.extend(counts.values())

        all_rows = np.concatenate([rows, np.asarray(add_rows, dtype=np.int64)])
        all_cols = np.concatenate([cols, np.asarray(add_cols, dtype=np.int64)])
        all_tf = np.concatenate([tf, np.asarray(add_tf, dtype=np.int64)])

        # Drop terms no document holds any more: rank_bm25 averages idf over the
        # corpus vocabulary, so a stale term would shift every floored idf.
        terms = list(vocab)
        df = np.bincount(all_rows, minlength=len(terms))
        live = df > 0
        new_row_of_old = np.cumsum(live, dtype=np.int64) - 1
        terms = [t for t, alive in zip(terms, live.tolist(), strict=True) if alive]
        all_rows = new_row_of_old[all_rows]

        # Kept postings are still sorted by (row, column) and added documents have
        # the highest columns, so a stable sort by row alone restores CSR order
        # (timsort on nearly sorted input: close to linear).
        order = np.argsort(all_rows, kind="stable")
        all_rows, all_cols, all_tf = all_rows[order], all_cols[order], all_tf[order]
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(all_rows, minlength=len(terms)), out=indptr[1:])
        return BM25Index(
            terms=terms, ids=np.asarray(ids, dtype=np.int64), doc_len=np.asarray(lengths, dtype=np.int64),
            indptr=indptr, cols=all_cols, tf=all_tf, k1=self.k1, b=self.b, epsilon=self.epsilon,
        )

    # --- scoring ----------------------------------------------------------------

    def __len__(self) -> int:
        return self.n_docs

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, (int, np.integer)) and int(self.positions([int(doc_id)])[0]) >= 0

    @property
    def n_terms(self) -> int:
        return len(self._terms)

    def idf(self, token: str) -> float:
        """The token's idf after the epsilon floor; 0.0 for a token not in the corpus."""
        row = self._terms.row(token)
        return 0.0 if row is None else float(self._idf[row])

    def max_idf(self) -> float:
        """ln((N + 0.5) / 0.5): the idf formula at df = 0, for tokens the corpus lacks."""
        return math.log(self.n_docs + 0.5) - math.log(0.5)

    def query_idf_sum(self, tokens: Sequence[str]) -> float:
        """Σ idf over the query tokens (with repetition); absent tokens count ``max_idf()``.

        Dividing a document's score by this gives a "how much of the query did it
        match" signal for the not-found judgement (judge.py).
        """
        missing = self.max_idf()
        total = 0.0
        for t in tokens:
            row = self._terms.row(t)
            total += missing if row is None else float(self._idf[row])
        return total

    def matched_tokens(self, doc_id: int, query_tokens: Sequence[str]) -> list[str]:
        """The query tokens (in query order, with repetition) that occur in document ``doc_id``.

        For "not found" signals such as the share of the query's idf a passage
        covers; empty for an unknown id.
        """
        pos = int(self.positions([int(doc_id)])[0])
        if pos < 0:
            return []
        found: list[str] = []
        for t in query_tokens:
            row = self._terms.row(t)
            if row is None:
                continue
            start, end = int(self._indptr[row]), int(self._indptr[row + 1])
            i = start + int(np.searchsorted(self._cols[start:end], pos))  # columns are sorted per row
            if i < end and self._cols[i] == pos:
                found.append(t)
        return found

    def _postings(self, query_tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Document columns and score contributions of every posting the query touches."""
        counts: dict[int, int] = {}
        for t in query_tokens:
            row = self._terms.row(t)
            if row is not None:
                counts[row] = counts.get(row, 0) + 1
        if not counts:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
        cols_parts = []
        weight_parts = []
        for row, count in counts.items():
            start, end = self._indptr[row], self._indptr[row + 1]
            cols_parts.append(self._cols[start:end])
            w = self._w[start:end] if self._w is not None else self._saturation(int(start), int(end))
            contrib = self._idf[row] * w
            weight_parts.append(contrib * count if count > 1 else contrib)
        return np.concatenate(cols_parts), np.concatenate(weight_parts)

    def scores_for(self, query_tokens: Sequence[str]) -> np.ndarray:
        """Dense scores aligned with ``self.ids``; equals ``BM25Okapi.get_scores``."""
        cols, weights = self._postings(query_tokens)
        return np.bincount(cols, weights=weights, minlength=self.n_docs).astype(np.float64, copy=False)

    def search(
        self,
        query_tokens: Sequence[str],
        top_k: int,
        *,
        allowed_ids: set[int] | frozenset[int] | np.ndarray | Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``top_k`` best ``(doc_id, score)`` among documents matching a query term.

        Sorted by score descending, then id ascending. ``allowed_ids`` (permissions,
        filters) is applied before the cut, so it never starves the result. A
        matched document is returned even when its score is not positive (a term
        floored to a zero or negative idf).
        """
        if top_k <= 0 or self.n_docs == 0:
            return []
        cols, weights = self._postings(query_tokens)
        if cols.shape[0] == 0:
            return []
        docs, inverse = np.unique(cols, return_inverse=True)
        scores = np.bincount(inverse.ravel(), weights=weights, minlength=docs.shape[0])
        doc_ids = self.ids[docs]
        if allowed_ids is not None:
            allowed = _as_id_array(allowed_ids)
            mask = np.isin(doc_ids, allowed)
            doc_ids, scores = doc_ids[mask], scores[mask]
        n = scores.shape[0]
        if n > top_k:
            # Keep everything tied with the k-th score, then order exactly.
            kth = np.partition(-scores, top_k - 1)[top_k - 1]
            mask = -scores <= kth
            doc_ids, scores = doc_ids[mask], scores[mask]
        order = np.lexsort((doc_ids, -scores))[:top_k]
        return [(int(i), float(s)) for i, s in zip(doc_ids[order].tolist(), scores[order].tolist(), strict=True)]

    # --- serialisation (the blob of the L2/L3 tiers: bm25_blob.py; the mapped file: bm25_file.py) ----
    def to_bytes(self) -> bytes:
        """Header (magic, format version) + zlib of JSON metadata and ``.npy`` arrays. No pickle."""
        return bm25_blob.encode(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> BM25Index:
        """Load ``to_bytes`` output; raises ``IndexFormatError`` on any other input."""
        return bm25_blob.decode(data, cls)


class TermTable(Protocol):
    """The vocabulary: term → CSR row. ``ListTerms`` in memory, ``bm25_file.MappedTerms`` from a mapped file."""

    def row(self, term: str) -> int | None: ...
    def __len__(self) -> int: ...
    def as_list(self) -> list[str]: ...


class ListTerms:
    """Terms in row order and a dict from term to row."""

    __slots__ = ("_terms", "_rows")

    def __init__(self, terms: list[str]) -> None:
        self._terms = terms
        self._rows = {t: i for i, t in enumerate(terms)}

    def row(self, term: str) -> int | None:
        return self._rows.get(term)

    def __len__(self) -> int:
        return len(self._terms)

    def as_list(self) -> list[str]:
        return self._terms  # (not copied: callers only read it)


def _as_id_array(allowed: set[int] | frozenset[int] | np.ndarray | Sequence[int]) -> np.ndarray:
    if isinstance(allowed, np.ndarray):
        return allowed.astype(np.int64, copy=False).ravel()
    if isinstance(allowed, (set, frozenset)):
        return np.fromiter((int(i) for i in allowed), dtype=np.int64, count=len(allowed))
    return np.asarray(list(allowed), dtype=np.int64)
