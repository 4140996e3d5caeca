"""The BM25 index as one compressed blob (the Redis and database tiers): JSON metadata + ``.npy`` arrays, no pickle.

Arrays are stored compactly: document frequencies instead of the CSR row
pointer, per-row gaps instead of absolute document columns, each in the
narrowest unsigned integer type that holds it. Loading recomputes idf and the
per-posting saturation from them (``BM25Index.__init__``).
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

MAGIC = b"ZKBM25"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<6sH")  # magic, format version


_Index = TypeVar("_Index")


class IndexFormatError(ValueError):
    """A serialised BM25 index is not one this code can read."""


def encode(index: Any) -> bytes:
    """Header (magic, format version) + zlib of JSON metadata and ``.npy`` arrays.

    Streamed: each array goes to the compressor a step of postings at a time, so encoding adds the compressed
    blob and a few steps' buffers to the index's memory, not copies of its postings (at 300k chunks the
    whole-array version peaked 1.5 GB above the index; docs/scaling.md "The BM25 build at 1M chunks").
    """
    state = index.state_arrays()
    indptr, cols = state["indptr"], state["cols"]
    meta = {"k1": index.k1, "b": index.b, "epsilon": index.epsilon, "n_docs": index.n_docs,
            "terms": index.terms.as_list()}
    sink = _Compressed(_HEADER.pack(MAGIC, FORMAT_VERSION))
    meta_bytes = json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    sink.write(struct.pack("<Q", len(meta_bytes)))
    sink.write(meta_bytes)
    df = np.diff(indptr)
    for array in (np.asarray(index.ids), _narrow(state["doc_len"]), _narrow(df)):
        np.lib.format.write_array(sink, np.ascontiguousarray(array), allow_pickle=False)
    row_starts = indptr[:-1][df > 0]  # where each non-empty row's postings begin, ascending
    _write_steps(sink, lambda a, b: _gaps(cols, row_starts, a, b), int(cols.shape[0]))
    _write_steps(sink, lambda a, b: np.asarray(state["tf"][a:b]), int(cols.shape[0]))
    return sink.finish()


_STEP = 4_000_000  # postings encoded at once


class _Compressed:
    """A file-like sink that compresses what is written to it (zlib level 3, as one stream)."""

    def __init__(self, head: bytes) -> None:
        self._zlib = zlib.compressobj(3)
        self._parts = [head]

    def write(self, data: bytes | memoryview) -> int:
        self._parts.append(self._zlib.compress(data))
        return len(data)

    def finish(self) -> bytes:
        self._parts.append(self._zlib.flush())
        return b"".join(self._parts)


def _gaps(cols: np.ndarray, row_starts: np.ndarray, a: int, b: int) -> np.ndarray:
    """Postings a..b as per-row gaps: each column minus the one before it in its row (a row starts from 0)."""
    gaps = cols[a:b].astype(np.int64)
    gaps[1:] -= cols[a : b - 1]
    if a > 0 and b > a:
        gaps[0] -= cols[a - 1]
    starts = row_starts[np.searchsorted(row_starts, a) : np.searchsorted(row_starts, b)]
    gaps[starts - a] = cols[starts]
    return gaps


def _write_steps(sink: _Compressed, part: Callable[[int, int], np.ndarray], n: int) -> None:
    """One ``.npy`` array of ``n`` values made a step at a time by ``part(a, b)``, in the narrowest type of them all."""
    top = max((int(part(a, min(a + _STEP, n)).max()) for a in range(0, n, _STEP)), default=0)
    dtype = _narrow(np.asarray([top])).dtype
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (n,)}
    np.lib.format.write_array_header_1_0(sink, header)
    for a in range(0, n, _STEP):
        sink.write(part(a, min(a + _STEP, n)).astype(dtype).tobytes())


def decode(data: bytes, cls: Callable[..., _Index]) -> _Index:
    """Load ``encode`` output as a ``cls`` (``BM25Index``); raises ``IndexFormatError`` on any other input."""
    data = bytes(data)
    if len(data) < _HEADER.size:
        raise IndexFormatError("BM25 index blob is too short")
    magic, version = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise IndexFormatError("not a zhiku BM25 index (bad magic)")
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"BM25 index format version {version} is not supported (expected {FORMAT_VERSION}); rebuild it"
        )
    try:
        payload = zlib.decompress(data[_HEADER.size :])
        buf = io.BytesIO(payload)
        (meta_len,) = struct.unpack("<Q", buf.read(8))
        meta = json.loads(buf.read(meta_len).decode("utf-8"))
        # allow_pickle=False: an object array raises ValueError instead of unpickling.
        arrays = [np.lib.format.read_array(buf, allow_pickle=False) for _ in range(5)]
    except (zlib.error, struct.error, ValueError, UnicodeDecodeError, EOFError) as exc:
        raise IndexFormatError(f"corrupt BM25 index: {exc}") from exc
    if not isinstance(meta, dict):
        raise IndexFormatError("corrupt BM25 index: bad metadata")
    ids, doc_len, df, gaps, tf = arrays
    terms = meta.get("terms")
    n_docs = meta.get("n_docs")
    ok = (
        isinstance(terms, list)
        and all(isinstance(t, str) for t in terms)
        and all(a.ndim == 1 and a.dtype.kind in "iu" for a in arrays)
        and ids.shape[0] == n_docs == doc_len.shape[0]
        and df.shape[0] == len(terms)
        and int(df.sum()) == gaps.shape[0] == tf.shape[0]
    )
    if not ok:
        raise IndexFormatError("corrupt BM25 index: inconsistent arrays")
    terms, n_docs = cast("list[str]", terms), cast(int, n_docs)  # as just checked
    indptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    # Undo the per-row gaps: a running sum minus the sum before each row's start.
    running = np.cumsum(gaps.astype(np.int64))
    before_row = np.concatenate([[0], running])[indptr[:-1]]
    cols = running - np.repeat(before_row, df.astype(np.int64))
    if cols.shape[0] and (int(cols.min()) < 0 or int(cols.max()) >= n_docs):
        raise IndexFormatError("corrupt BM25 index: document column out of range")
    try:
        return cls(
            terms=terms, ids=ids, doc_len=doc_len, indptr=indptr, cols=cols, tf=tf,
            k1=meta["k1"], b=meta["b"], epsilon=meta["epsilon"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"corrupt BM25 index: {exc}") from exc


def _narrow(array: np.ndarray) -> np.ndarray:
    """The array in the narrowest unsigned type holding its (non-negative) values."""
    top = int(array.max()) if array.shape[0] else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return array.astype(dtype)
    return array.astype(np.uint64)
