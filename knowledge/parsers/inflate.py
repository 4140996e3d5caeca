"""A cap on the bytes pdfminer inflates from a PDF's FlateDecode streams.

pdfplumber reads pages through pdfminer.six, which inflates every compressed stream (page contents,
forms, fonts, object streams) with a plain ``zlib.decompress``: a 1.5 MB PDF whose content stream is
zeros inflates to 1.5 GiB in memory, and pdfminer has no setting to stop it. (pypdf, which reads the
outline and document info here, has its own caps: ``pypdf.Configuration``.) So ``pdfminer.pdftypes``
is given a stand-in for its ``zlib`` module whose ``decompress`` inflates in pieces against the
parse's ``Meter`` (``knowledge.parsers.budget``) and raises ``ResourceLimit("inflated")`` once the
document's streams together pass it, before the bytes exist. Outside ``capped()`` it is zlib.
"""
from __future__ import annotations

import contextvars
import zlib
from contextlib import contextmanager

from knowledge.parsers.budget import Meter

_PIECE = 1024 * 1024  # inflate at most this many bytes per step
_meter: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("zhiku_inflate_meter", default=None)


@contextmanager
def capped(limit_bytes: int):
    """Count every byte pdfminer inflates inside the block against ``limit_bytes``."""
    token = _meter.set(Meter("inflated", limit_bytes))
    try:
        yield
    finally:
        _meter.reset(token)


def _decompress(data: bytes, wbits: int = zlib.MAX_WBITS, bufsize: int = zlib.DEF_BUF_SIZE) -> bytes:
    """``zlib.decompress`` that stops at the active meter's limit (same results and errors otherwise)."""
    meter = _meter.get()
    if meter is None:
        return zlib.decompress(data, wbits, bufsize)
    inflater = _CappedInflater(zlib.decompressobj(wbits), meter)
    out = inflater.decompress(data)
    while not inflater.eof:
        more = inflater.decompress(b"")
        if not more:
            raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
        out += more
    return out


class _CappedInflater:
    """A ``zlib.decompressobj`` whose output is counted against a meter (pdfminer's damaged-stream path)."""

    def __init__(self, inner, meter: Meter | None) -> None:
        self._inner = inner
        self._meter = meter

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._meter is None or max_length:
            piece = self._inner.decompress(data, max_length)
            if self._meter is not None:
                self._meter.add(len(piece))
            return piece
        pieces = []
        pending = data
        while True:
            piece = self._inner.decompress(pending, _PIECE)
            self._meter.add(len(piece))
            pieces.append(piece)
            pending = self._inner.unconsumed_tail
            if self._inner.eof or not (pending or len(piece) == _PIECE):
                break
        return b"".join(pieces)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


class _ZlibForPdfminer:
    """What ``pdfminer.pdftypes`` sees as ``zlib``."""

    error = zlib.error
    MAX_WBITS = zlib.MAX_WBITS
    decompress = staticmethod(_decompress)

    @staticmethod
    def decompressobj(*args, **kwargs):
        return _CappedInflater(zlib.decompressobj(*args, **kwargs), _meter.get())

    def __getattr__(self, name: str):
        return getattr(zlib, name)


def install() -> None:
    """Put the capped inflater in pdfminer (idempotent)."""
    from pdfminer import pdftypes

    if not isinstance(pdftypes.zlib, _ZlibForPdfminer):
        pdftypes.zlib = _ZlibForPdfminer()  # type: ignore[assignment]  # a stand-in for the module, on purpose
