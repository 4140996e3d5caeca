"""A cap on the bytes pdfminer inflates from a PDF's FlateDecode streams, checked before they exist.

pdfplumber reads pages through pdfminer.six, which inflates every compressed stream (page contents,
forms, fonts, object streams) with a plain ``zlib.decompress``: a 1.5 MB PDF whose content stream is
zeros inflates to 1.5 GiB in memory, and pdfminer has no setting to stop it. (pypdf, which reads the
outline and document info here, has its own caps: ``pypdf.Configuration``.) So ``pdfminer.pdftypes``
is given a stand-in for its ``zlib`` module whose ``decompress`` first inflates the stream into
nothing, a piece at a time, and keeps its bytes only when both rules hold:

- the document's streams together stay within the parse's ``Meter`` (``knowledge.parsers.budget``),
  else ``ResourceLimit("inflated")``;
- the stream is no bomb: past ``BOMB_CHECK_FLOOR`` it may inflate to at most ``max_ratio`` times its
  compressed size, as a ZIP part may (``knowledge.parsers.base.check_ooxml_zip``), else
  ``archive_bomb``. A page's text, fonts and object streams compress a few times; a stream of zeros
  a thousand times.

Measuring first costs a second inflation of what is kept (zlib inflates some hundreds of MB a second)
and saves holding what is refused: a 1 MiB stream inflating to 1 GiB used to fill 256 MiB of the
parsing child before the cap stopped it, and one inflating to 250 MiB passed the cap and took the
child to 650 MB and ten minutes of pdfminer (docs/production.md, "Budgets for uploaded files").
pdfminer's fallback for a damaged stream inflates through ``decompressobj`` a byte at a time; that
path is counted as it goes, against the same two rules. Outside ``capped()`` it is zlib.
"""
from __future__ import annotations

import contextvars
import zlib
from contextlib import contextmanager
from dataclasses import dataclass

from knowledge.parsers.budget import Meter
from knowledge.parsers.types import BOMB_CHECK_FLOOR, ParseError

_PIECE = 1024 * 1024  # inflate at most this many bytes per step


@dataclass
class _Cap:
    """The rules of one ``capped()`` block: the document's meter and the largest inflation ratio of a stream."""

    meter: Meter
    max_ratio: int


_cap: contextvars.ContextVar[_Cap | None] = contextvars.ContextVar("zhiku_inflate_cap", default=None)


@contextmanager
def capped(limit_bytes: int, max_ratio: int):
    """Count every byte pdfminer inflates inside the block against ``limit_bytes``, and refuse a stream that
    inflates past ``BOMB_CHECK_FLOOR`` to more than ``max_ratio`` times its compressed size."""
    token = _cap.set(_Cap(Meter("inflated", limit_bytes), max_ratio))
    try:
        yield
    finally:
        _cap.reset(token)


def _decompress(data: bytes, wbits: int = zlib.MAX_WBITS, bufsize: int = zlib.DEF_BUF_SIZE) -> bytes:
    """``zlib.decompress`` that refuses, before keeping a byte, a stream over the active cap (same results and
    errors otherwise)."""
    cap = _cap.get()
    if cap is None:
        return zlib.decompress(data, wbits, bufsize)
    _measure(data, wbits, cap)
    inflater = _CappedInflater(zlib.decompressobj(wbits), cap)
    out = inflater.decompress(data)
    while not inflater.eof:
        more = inflater.decompress(b"")
        if not more:
            raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
        out += more
    return out


def _measure(data: bytes, wbits: int, cap: _Cap) -> None:
    """Inflate ``data`` into nothing: raise as the rules say once its size is known (or the budget is passed).

    A damaged stream stops the count where zlib stops; pdfminer's fallback then counts as it inflates.
    """
    inflater = zlib.decompressobj(wbits)
    size = 0
    pending = data
    try:
        while not inflater.eof:
            piece = len(inflater.decompress(pending, _PIECE))
            size += piece
            if size > cap.meter.left:
                cap.meter.add(size)  # raises ResourceLimit("inflated"): the document's streams would pass it
            pending = inflater.unconsumed_tail
            if not pending and piece < _PIECE:  # all of it read, all it makes made
                break
    except zlib.error:
        pass
    _check_ratio(size, len(data), cap.max_ratio)


def _check_ratio(inflated: int, compressed: int, max_ratio: int) -> None:
    if inflated > BOMB_CHECK_FLOOR and inflated > max_ratio * max(compressed, 1):
        raise ParseError("archive_bomb", f"a compressed stream of the PDF inflates {inflated // max(compressed, 1)}x its"
                                         f" size, over the limit of {max_ratio}x")


class _CappedInflater:
    """A ``zlib.decompressobj`` whose output is counted against a cap (pdfminer's damaged-stream path)."""

    def __init__(self, inner, cap: _Cap | None) -> None:
        self._inner = inner
        self._cap = cap
        self._given = 0  # compressed bytes handed in
        self._made = 0  # bytes inflated

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._cap is None:
            return self._inner.decompress(data, max_length)
        self._given += len(data)
        if max_length:
            return self._count(self._inner.decompress(data, max_length))
        pieces = []
        pending = data
        while True:
            piece = self._count(self._inner.decompress(pending, _PIECE))
            pieces.append(piece)
            pending = self._inner.unconsumed_tail
            if self._inner.eof or not (pending or len(piece) == _PIECE):
                break
        return b"".join(pieces)

    def _count(self, piece: bytes) -> bytes:
        assert self._cap is not None
        self._made += len(piece)
        self._cap.meter.add(len(piece))
        _check_ratio(self._made, self._given, self._cap.max_ratio)
        return piece

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


class _ZlibForPdfminer:
    """What ``pdfminer.pdftypes`` sees as ``zlib``."""

    error = zlib.error
    MAX_WBITS = zlib.MAX_WBITS
    decompress = staticmethod(_decompress)

    @staticmethod
    def decompressobj(*args, **kwargs):
        return _CappedInflater(zlib.decompressobj(*args, **kwargs), _cap.get())

    def __getattr__(self, name: str):
        return getattr(zlib, name)


def install() -> None:
    """Put the capped inflater in pdfminer (idempotent)."""
    from pdfminer import pdftypes

    if not isinstance(pdftypes.zlib, _ZlibForPdfminer):
        pdftypes.zlib = _ZlibForPdfminer()  # type: ignore[assignment]  # a stand-in for the module, on purpose
