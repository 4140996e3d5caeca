"""A full BM25 build inside a memory bound: ``(doc_id, tokens)`` pairs → a term-major CSR of term frequencies.

The corpus streams through once, a batch of about a million tokens at a time. Each batch is numbered against
the growing vocabulary (first appearance order) and counted into its distinct (term, document) pairs at once,
so what is kept is one int32 term, int32 column and small count per *distinct* pair — never a token string,
never a pair per token. A counting sort then writes the CSR: each term's row starts at the running total of
the document frequencies, and the batches, taken in document order, fill each row left to right, so the columns
of a row come out sorted without a sort over all the pairs.

Memory, with P distinct pairs: the batches' pairs (4 + 4 + 2 bytes each, while they are scattered) and the CSR
(4 + 4 bytes each): about 18 bytes a pair at the peak, against 40+ for int64 pairs sorted by ``np.unique``.
Figures at 1M chunks are in docs/scaling.md ("The BM25 build at 1M chunks").
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

BATCH_TOKENS = 1_000_000


@dataclass
class Postings:
    """What ``BM25Index`` is built from: the vocabulary, the documents and the CSR."""

    terms: list[str]
    ids: np.ndarray  # int64, one per document, in input order
    lengths: np.ndarray  # int64 token counts
    indptr: np.ndarray  # int64, len(terms) + 1
    cols: np.ndarray  # int32 document positions, sorted within each row
    tf: np.ndarray  # int32 counts


@dataclass
class _Batch:
    terms: np.ndarray  # int32, sorted (term-major, then document)
    cols: np.ndarray  # int32
    tf: np.ndarray  # uint16 or int32


def build_postings(docs: Iterable[tuple[int, Sequence[str]]], *, batch_tokens: int | None = None) -> Postings:
    """Count ``docs`` into a CSR (``Postings``); the document order is kept, ids are not checked here."""
    batch_tokens = batch_tokens or BATCH_TOKENS
    ids: list[int] = []
    lengths: list[int] = []
    vocab: dict[str, int] = {}
    batches: list[_Batch] = []
    tokens: list[str] = []
    first_col = 0  # the column of the batch's first document

    def flush() -> None:
        nonlocal first_col
        if tokens:
            batches.append(_count(tokens, lengths[first_col:], first_col, vocab))
            tokens.clear()
        first_col = len(ids)

    for doc_id, doc_tokens in docs:
        ids.append(int(doc_id))
        lengths.append(len(doc_tokens))
        tokens.extend(doc_tokens)
        if len(tokens) >= batch_tokens:
            flush()
    flush()
    terms = list(vocab)
    vocab.clear()
    indptr, cols, tf = _scatter(batches, len(terms))
    return Postings(terms=terms, ids=np.asarray(ids, dtype=np.int64), lengths=np.asarray(lengths, dtype=np.int64),
                    indptr=indptr, cols=cols, tf=tf)


def _count(tokens: list[str], lengths: Sequence[int], first_col: int, vocab: dict[str, int]) -> _Batch:
    """One batch's distinct (term, column) pairs with their counts, sorted term-major."""
    for term in dict.fromkeys(tokens):
        vocab.setdefault(term, len(vocab))
    rows = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    local = np.repeat(np.arange(len(lengths), dtype=np.int64), np.asarray(lengths, dtype=np.int64))
    width = max(len(lengths), 1)
    keys, counts = np.unique(rows * width + local, return_counts=True)
    terms = keys // width
    cols = keys - terms * width + first_col
    tf_type = np.uint16 if counts.max(initial=0) <= np.iinfo(np.uint16).max else np.int32
    return _Batch(terms=terms.astype(np.int32), cols=cols.astype(np.int32), tf=counts.astype(tf_type))


def _scatter(batches: list[_Batch], n_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSR by a counting sort: rows sized by document frequency, filled batch by batch (document order)."""
    df = np.zeros(n_terms, dtype=np.int64)
    for batch in batches:
        df += np.bincount(batch.terms, minlength=n_terms)
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    total = int(indptr[-1])
    cols = np.empty(total, dtype=np.int32)
    tf = np.empty(total, dtype=np.int32)
    filled = indptr[:-1].copy()  # the next free slot of each row
    while batches:
        batch = batches.pop(0)  # each batch's pairs go as soon as they are placed
        if batch.terms.shape[0] == 0:
            continue
        # Within the batch, a term's pairs are contiguous (sorted term-major): slot = row's next free + rank in run.
        starts = np.flatnonzero(np.r_[True, batch.terms[1:] != batch.terms[:-1]])
        run_terms = batch.terms[starts]
        run_lengths = np.diff(np.r_[starts, batch.terms.shape[0]])
        rank = np.arange(batch.terms.shape[0], dtype=np.int64) - np.repeat(starts, run_lengths)
        slots = np.repeat(filled[run_terms], run_lengths) + rank
        cols[slots] = batch.cols
        tf[slots] = batch.tf
        filled[run_terms] += run_lengths
    return indptr, cols, tf
