"""scripts/scale_corpus.py: the scale benchmarks' synthetic passages and vectors (no database, no bench data)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
try:
    import scale_corpus
finally:
    sys.path.pop(0)


def test_halves_split_at_the_sentence_end_nearest_the_middle():
    text = "甲乙。丙丁戊己。庚辛壬癸子丑。"
    first, second = scale_corpus.halves(text)
    assert first + second == text
    assert first == "甲乙。丙丁戊己。"  # ends at 8 of 15: nearer the middle (7) than 3
    assert scale_corpus.halves("没有句号的文本") == ("没有句", "号的文本")  # no sentence end: the middle


def test_passages_beyond_the_corpus_join_halves_of_two_different_real_passages():
    pairs = [(f"a{i}。", f"b{i}。") for i in range(5)]
    tokens = [([f"a{i}"], [f"b{i}"]) for i in range(5)]
    permutations: dict[int, np.ndarray] = {}
    assert scale_corpus.passage(3, pairs, tokens, permutations) == ("a3。b3。", ["a3", "b3"])
    synthetic = [scale_corpus.passage(k, pairs, tokens, permutations) for k in range(5, 15)]
    for k, (text, toks) in zip(range(5, 15), synthetic, strict=True):
        i = k % 5
        assert text.startswith(f"b{i}。") and toks[0] == f"b{i}"
        assert toks[1].startswith("a") and toks[1] != f"a{i}"  # the other half comes from another passage
        assert text == toks[0] + "。" + toks[1] + "。"
    # Deterministic: the same chunk numbers give the same passages in a fresh run.
    assert [scale_corpus.passage(k, pairs, tokens, {}) for k in range(5, 15)] == synthetic


def test_synthetic_vectors_are_unit_length_deterministic_and_near_their_bases():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((20, 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    v = scale_corpus.synthetic_vectors(base, 1000, 50, noise=0.35)
    assert v.shape == (50, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v, scale_corpus.synthetic_vectors(base, 1000, 50, noise=0.35))
    assert not np.array_equal(v, scale_corpus.synthetic_vectors(base, 2000, 50, noise=0.35))
    # Each is a blend of real vectors, not noise: its nearest base vector is far closer than chance (~0.05).
    assert float(np.median((v @ base.T).max(axis=1))) > 0.5
