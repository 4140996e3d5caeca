"""The BM25 index as one flat file that every process of a machine maps read-only (the L0 tier).

Layout: ``MAGIC``, a little-endian u32 format version and u32 header length, a
JSON header (parameters, and each array's dtype, length and byte offset), then
the arrays, each 64-byte aligned: the CSR postings (``indptr``, ``cols``, ``tf`` in
the narrowest of uint8/uint16/int32 that holds it), ``idf``, document ids with their
argsort (``id_order``) and sorted (``sorted_ids``), document lengths and each one's ``k1 * (1 - b + b * |d| / avgdl)``
(``doc_norm``), and the vocabulary as a term table: the
UTF-8 bytes of every term in row order (``term_bytes``, ``term_offsets``) and
the rows sorted by those bytes (``term_order``) for a binary search.

idf is written as the built ``BM25Index`` computed it; the per-posting saturation
``w`` is not stored (it would be 8 of every posting's 13–16 bytes): a query computes
it for the postings it touches from tf and document length with the build's own
expression, so a mapped index scores with exactly the same floats. Mapping costs
no copy: the pages come from the page cache, shared by every process that maps
the file, and only the pages a search touches are read. No pickle anywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .bm25 import BM25Index, IndexFormatError

MAGIC = b"ZKBM25MF"
FILE_VERSION = 1
_PREFIX = struct.Struct("<8sII")  # magic, file version, header length
_ALIGN = 64
# name → dtype written; a mapped file must hold exactly these.
_DTYPES = {
    "ids": "<i8", "id_order": "<i8", "sorted_ids": "<i8", "doc_len": "<i8", "indptr": "<i8", "cols": "<i4", "tf": "<i4",
    "idf": "<f8", "doc_norm": "<f8", "term_offsets": "<i8", "term_order": "<i8", "term_bytes": "|u1",
}
_TF_DTYPES = ("|u1", "<u2", "<i4")  # tf: the narrowest that holds the largest count


class MappedTerms:
    """Term → row by binary search over the file's sorted term table (memoryviews: no numpy scalars per step)."""

    __slots__ = ("_bytes", "_offsets", "_order", "_n")

    def __init__(self, term_bytes: np.ndarray, offsets: np.ndarray, order: np.ndarray) -> None:
        self._bytes = term_bytes.data if term_bytes.shape[0] else memoryview(b"")
        self._offsets = offsets.data.cast("B").cast("q")
        self._order = order.data.cast("B").cast("q") if order.shape[0] else memoryview(b"").cast("q")
        self._n = int(order.shape[0])

    def _term(self, row: int) -> bytes:
        return self._bytes[self._offsets[row] : self._offsets[row + 1]].tobytes()

    def row(self, term: str) -> int | None:
        key = term.encode("utf-8")
        lo, hi = 0, self._n
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term(self._order[mid]) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < self._n and self._term(self._order[lo]) == key:
            return int(self._order[lo])
        return None

    def __len__(self) -> int:
        return self._n

    def as_list(self) -> list[str]:
        blob = self._bytes.tobytes()
        offsets = self._offsets
        return [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(self._n)]


def _term_table(terms: list[str]) -> dict[str, np.ndarray]:
    encoded = [t.encode("utf-8") for t in terms]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    order = sorted(range(len(encoded)), key=encoded.__getitem__)
    return {"term_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8),
            "term_offsets": offsets, "term_order": np.asarray(order, dtype=np.int64)}


def _tf_dtype(tf: np.ndarray) -> str:
    top = int(tf.max()) if tf.shape[0] else 0
    return next(d for d in _TF_DTYPES if top <= np.iinfo(np.dtype(d)).max)


def write_index_file(index: BM25Index, path: str | os.PathLike[str]) -> int:
    """Write ``index`` to ``path`` atomically (a temporary file in the same folder, then ``os.replace``); its size."""
    arrays = {**index.state_arrays(), **_term_table(index.terms.as_list())}
    arrays["doc_norm"] = index.doc_norm(arrays["doc_len"])
    layout: dict[str, tuple[str, int, int]] = {}  # name -> (dtype, length, byte offset): a JSON list
    header_guess = 4096 + 64 * len(arrays)
    offset = 0
    dtypes = dict(_DTYPES, tf=_tf_dtype(arrays["tf"]))
    for name, dtype in dtypes.items():
        arrays[name] = np.ascontiguousarray(arrays[name], dtype=dtype)
        layout[name] = (dtype, int(arrays[name].shape[0]), offset)
        offset += -(-arrays[name].nbytes // _ALIGN) * _ALIGN
    meta = {"k1": index.k1, "b": index.b, "epsilon": index.epsilon, "avgdl": index.avgdl,
            "average_idf": index.average_idf, "arrays": layout}
    header = json.dumps(meta, separators=(",", ":")).encode("utf-8")
    data_start = -(-(_PREFIX.size + max(len(header), header_guess)) // _ALIGN) * _ALIGN
    meta["data_start"] = data_start
    header = json.dumps(meta, separators=(",", ":")).encode("utf-8")
    if _PREFIX.size + len(header) > data_start:
        raise ValueError("BM25 file header does not fit")  # cannot happen: header_guess leaves room
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".bm25", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_PREFIX.pack(MAGIC, FILE_VERSION, len(header)) + header)
            for name in _DTYPES:
                fh.seek(data_start + layout[name][2])
                fh.write(arrays[name].data.cast("B"))
            fh.truncate(data_start + offset)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return data_start + offset


def map_index_file(path: str | os.PathLike[str]) -> BM25Index:
    """The index in ``path``, its arrays views of one read-only ``numpy.memmap``; ``IndexFormatError`` if bad."""
    try:
        mapped = np.memmap(path, dtype=np.uint8, mode="r")
        magic, version, header_len = _PREFIX.unpack_from(mapped[: _PREFIX.size].tobytes())
    except (OSError, ValueError, struct.error) as exc:
        raise IndexFormatError(f"cannot map BM25 file {path}: {exc}") from exc
    if magic != MAGIC or version != FILE_VERSION:
        raise IndexFormatError(f"{path} is not a BM25 file of format {FILE_VERSION}")
    try:
        meta = json.loads(mapped[_PREFIX.size : _PREFIX.size + header_len].tobytes().decode("utf-8"))
        data_start, layout = int(meta["data_start"]), meta["arrays"]
        arrays = {}
        for name, dtype in _DTYPES.items():
            got_dtype, length, offset = layout[name]
            dtype = got_dtype if name == "tf" and got_dtype in _TF_DTYPES else dtype
            start = data_start + int(offset)
            end = start + int(length) * np.dtype(dtype).itemsize
            if got_dtype != dtype or start < data_start or end > mapped.shape[0]:
                raise IndexFormatError(f"{path}: array {name} is damaged or truncated")
            arrays[name] = mapped[start:end].view(dtype).view(np.ndarray)  # plain arrays: no memmap subclass per operation
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise IndexFormatError(f"corrupt BM25 file {path}: {exc}") from exc
    n_docs, n_terms = arrays["ids"].shape[0], arrays["idf"].shape[0]
    consistent = (
        arrays["id_order"].shape[0] == arrays["sorted_ids"].shape[0] == arrays["doc_len"].shape[0] == arrays["doc_norm"].shape[0] == n_docs
        and arrays["indptr"].shape[0] == n_terms + 1 == arrays["term_offsets"].shape[0]
        and arrays["term_order"].shape[0] == n_terms
        and int(arrays["indptr"][-1]) == arrays["cols"].shape[0] == arrays["tf"].shape[0]
        and int(arrays["term_offsets"][-1]) == arrays["term_bytes"].shape[0]
    )
    if not consistent:
        raise IndexFormatError(f"corrupt BM25 file {path}: inconsistent arrays")
    terms = MappedTerms(arrays.pop("term_bytes"), arrays.pop("term_offsets"), arrays.pop("term_order"))
    return BM25Index.from_state(terms=terms, arrays=arrays, k1=meta["k1"], b=meta["b"], epsilon=meta["epsilon"],
                                avgdl=meta["avgdl"], average_idf=meta["average_idf"])


class MachineCopies:
    """Index files of one machine: ``<root>/<namespace>/<kb key>/v<version>-<fingerprint>.bm25``.

    One file per (KB, version, analyzer fingerprint), written once by whichever process
    builds it and mapped by the others; ``lock`` (``fcntl.flock`` on the KB folder's
    ``.lock``) keeps two processes of the machine from building the same one. The
    namespace separates installations sharing a machine, the KB key (id and creation
    time) a KB from a later one given the same id by a recreated database.
    """

    def __init__(self, root: str | os.PathLike[str], namespace: str) -> None:
        self.root = Path(root)
        self.namespace = "".join(c if c.isalnum() or c in "-_." else "_" for c in namespace) or "default"

    def folder(self, kb_key: str) -> Path:
        return self.root / self.namespace / kb_key

    def path(self, kb_key: str, version: int, fingerprint: str) -> Path:
        return self.folder(kb_key) / f"v{int(version)}-{fingerprint[:16]}.bm25"

    def open(self, path: Path) -> BM25Index | None:
        """The mapped index at ``path``; None when absent; a damaged file is removed (and None)."""
        if not path.exists():
            return None
        try:
            return map_index_file(path)
        except IndexFormatError:
            path.unlink(missing_ok=True)
            return None

    def lock(self, kb_key: str, timeout: float | None, poll: float = 0.05) -> contextlib.AbstractContextManager[bool]:
        """A context manager holding the KB folder's build lock; it yields False when ``timeout`` ran out."""
        import fcntl
        import time

        folder = self.folder(kb_key)
        folder.mkdir(parents=True, exist_ok=True)

        @contextlib.contextmanager
        def held() -> Iterator[bool]:
            with open(folder / ".lock", "a+b") as fh:
                if timeout is None:
                    fcntl.flock(fh, fcntl.LOCK_EX)
                else:
                    deadline = time.monotonic() + timeout
                    while True:
                        try:
                            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                            break
                        except BlockingIOError:
                            if time.monotonic() >= deadline:
                                yield False
                                return
                            time.sleep(poll)
                try:
                    yield True
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)

        return held()

    def publish(self, index: BM25Index, kb_key: str, version: int, fingerprint: str) -> Path:
        """Write the file (atomically) and remove the KB's files of older versions (mappers keep their pages)."""
        path = self.path(kb_key, version, fingerprint)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_index_file(index, path)
        for other in path.parent.glob("v*.bm25"):
            try:
                older = int(other.name[1:].split("-", 1)[0]) < int(version)
            except ValueError:
                continue
            if other != path and (older or not other.name.endswith(path.name.split("-", 1)[1])):
                other.unlink(missing_ok=True)  # an older version, or another analyzer's at this version
        return path
