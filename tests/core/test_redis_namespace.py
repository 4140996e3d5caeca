"""Issue 8: one Redis namespace per installation (ZHIKU_REDIS_PREFIX).

Two installations (two databases) sharing one Redis read each other's search results, query
embeddings and BM25 indexes, and consumed each other's Celery tasks: no key carried the
installation. Here two installations are two prefixes over one Redis database; the real
worker test is in tests/knowledge/ingestion/test_background.py.
"""
from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import dj_database_url
import pytest
import redis
from celery import Celery

import knowledge.services.search as search_service
from knowledge.keyword_store import BM25IndexStore, keyword_store
from knowledge.models import Chunk
from knowledge.services.search import CachingEmbedder, kb_search_config
from tests.helpers import redis_available

REDIS_URL = "redis://127.0.0.1:6379/11"
ROOT = Path(__file__).resolve().parent.parent.parent
A = "zhiku:aaaaaaaaaaaa"
B = "zhiku:bbbbbbbbbbbb"
DOCS = {
    "price.md": "# 价格\n\n专业版每年 999 元，企业版请联系销售。",
    "install.md": "# 安装\n\n运行 pip install zhiku 即可安装知库。错误码 E1042 表示端口被占用。",
}

needs_redis = pytest.mark.skipif(not redis_available(REDIS_URL), reason="needs Redis at 127.0.0.1:6379 (make test starts one)")


def installation(settings, prefix: str) -> None:
    """Act as the installation whose prefix is ``prefix``, as a fresh process would (empty in-memory tiers)."""
    settings.REDIS_URL = REDIS_URL
    settings.ZHIKU_REDIS_PREFIX = prefix
    settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": prefix}}
    keyword_store().invalidate_local()
    search_service._embedders.clear()


@pytest.fixture
def shared_redis():
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def loaded(kb, ingest):
    ingest(kb, DOCS)
    keyword_store().invalidate_local()
    kb.refresh_from_db()  # the KB as a request reads it (ingestion moved its version on)
    return kb


def search(client, kb_ids, query):
    response = client.post("/api/search/", {"query": query, "kb_ids": kb_ids}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


@needs_redis
@pytest.mark.django_db
def test_a_result_cached_by_one_installation_is_not_served_to_another(loaded, alice, client_for, settings, shared_redis):
    c = client_for(alice)
    installation(settings, A)
    assert search(c, [loaded.pk], "专业版价格")["cached"] is False
    assert search(c, [loaded.pk], "专业版价格")["cached"] is True
    # Installation B: same KB id, version, user id and query, its own database.
    installation(settings, B)
    assert search(c, [loaded.pk], "专业版价格")["cached"] is False
    assert search(c, [loaded.pk], "专业版价格")["cached"] is True
    assert shared_redis.keys(f"{A}:search:*") and shared_redis.keys(f"{B}:search:*")


@needs_redis
def test_a_query_embedding_cached_by_one_installation_is_not_read_by_another(settings, shared_redis):
    class Counting:
        model_id, dim = "m", 4

        def __init__(self, value):
            self.value, self.calls = value, 0

        def embed_query(self, text):
            self.calls += 1
            return [self.value] * 4

    installation(settings, A)
    a = Counting(1.0)
    assert list(CachingEmbedder(a).embed_query("问题")) == [1.0] * 4
    assert list(CachingEmbedder(a).embed_query("问题")) == [1.0] * 4 and a.calls == 1  # the second from Redis
    installation(settings, B)
    b = Counting(2.0)
    assert list(CachingEmbedder(b).embed_query("问题")) == [2.0] * 4 and b.calls == 1
    assert [k.decode().split(":qemb:")[0] for k in shared_redis.keys("*")] in ([A, B], [B, A])


@needs_redis
@pytest.mark.django_db
def test_a_bm25_index_written_under_one_prefix_is_not_read_under_another(loaded, settings, shared_redis, tmp_path):
    installation(settings, A)
    cfg = kb_search_config(loaded)
    BM25IndexStore().get_index(cfg)
    assert len(shared_redis.keys(f"{A}:bm25:{loaded.pk}:*")) == 1
    reader = BM25IndexStore(directory=str(tmp_path / "machine-b"))  # another machine: no file of this index
    reader.get_index(cfg)
    assert reader.last_source[loaded.pk] == "l2"
    # Installation A's index is empty for this KB id and version (another database, other content):
    # B must not read it and lose its keyword hits.
    from knowledge.retrieval.bm25 import BM25Index

    (key,) = shared_redis.keys(f"{A}:bm25:{loaded.pk}:*")
    empty = BM25Index.build([])
    shared_redis.set(key, empty.to_bytes())
    installation(settings, B)
    other = BM25IndexStore()
    index = other.get_index(cfg)
    assert other.last_source[loaded.pk] != "l2"
    assert index.n_docs == Chunk.objects.filter(kb=loaded).count() > 0
    assert len(shared_redis.keys(f"{B}:bm25:{loaded.pk}:*")) == 1


@needs_redis
@pytest.mark.django_db
def test_every_key_the_app_writes_starts_with_the_prefix(kb, alice, ingest, client_for, settings, shared_redis,
                                                         django_capture_on_commit_callbacks):
    from config.celery import app
    from knowledge.ingestion.upload import UploadedItem, document_upload

    prefix = settings.ZHIKU_REDIS_PREFIX  # this process's own (derived from its database)
    installation(settings, prefix)
    old = app.conf.broker_url
    app.conf.broker_url = REDIS_URL
    try:
        ingest(kb, DOCS)  # inline ingestion (index, version bump)
        c = client_for(alice)
        search(c, [kb.pk], "专业版价格")
        search(c, [kb.pk], "E1042")
        settings.ZHIKU_INGEST_MODE = "celery"  # queued for a worker (none runs here)
        with django_capture_on_commit_callbacks(execute=True):
            document_upload(kb=kb, items=[UploadedItem("faq.md", "# 常见问题\n\n退货七天内。".encode())])
        from django.core.cache import cache

        cache.set("probe", 1)
    finally:
        app.conf.broker_url = old
        app.pool.force_close_all()
        app._pool = None  # a closed pool is never reopened: the next user of the app gets new ones
        app.amqp._producer_pool = None
    keys = sorted(k.decode() for k in shared_redis.keys("*"))
    assert any(":search:" in k for k in keys) and any(":bm25:" in k for k in keys) and any(":qemb:" in k for k in keys)
    assert any(k.endswith(":celery") for k in keys)  # the queued ingestion
    assert [k for k in keys if not k.startswith(prefix + ":")] == []


def settings_for(monkeypatch, **env) -> dict:
    """The settings module evaluated under ``env`` (a fresh process's view, without starting it)."""
    for name in ("ZHIKU_ENV", "ZHIKU_REDIS_PREFIX", "REDIS_URL", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 60)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "config" / "settings.py"))


def test_every_redis_use_is_configured_with_the_prefix(monkeypatch):
    conf = settings_for(monkeypatch, DATABASE_URL="postgres://u:p@db.example:5432/kb", REDIS_URL=REDIS_URL)
    prefix = conf["ZHIKU_REDIS_PREFIX"]
    assert prefix.startswith("zhiku:") and len(prefix) == len("zhiku:") + 12
    assert conf["CACHES"]["default"]["KEY_PREFIX"] == prefix
    assert conf["CHANNEL_LAYERS"]["default"]["CONFIG"]["prefix"].startswith(prefix + ":")
    app = Celery("probe")
    app.config_from_object(SimpleNamespace(**conf), namespace="CELERY")
    assert app.conf.task_default_queue.startswith(prefix + ":")
    assert app.conf.task_default_exchange == app.conf.task_default_routing_key == app.conf.task_default_queue
    assert app.conf.broker_transport_options["global_keyprefix"] == prefix + ":"


def test_the_default_prefix_follows_the_database_identity(monkeypatch):
    def prefix(**env):
        return settings_for(monkeypatch, **env)["ZHIKU_REDIS_PREFIX"]

    a = prefix(DATABASE_URL="postgres://u:p@db.example:5432/kb_a")
    assert a == prefix(DATABASE_URL="postgres://u:p@db.example:5432/kb_a")  # stable
    assert a == prefix(DATABASE_URL="postgres://other:pw2@DB.example:5432/kb_a?sslmode=require")  # same database
    assert a != prefix(DATABASE_URL="postgres://u:p@db.example:5432/kb_b")  # only the name differs
    assert a != prefix(DATABASE_URL="postgres://u:p@db.example:5433/kb_a")
    assert a != prefix(DATABASE_URL="postgres://u:p@db2.example:5432/kb_a")
    assert prefix(DATABASE_URL="postgres://u:p@db.example:5432/kb_a", ZHIKU_REDIS_PREFIX="acme-prod") == "acme-prod"
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        prefix(DATABASE_URL="postgres://u:p@db.example:5432/kb_a", ZHIKU_REDIS_PREFIX="has space")


def test_the_embedded_database_prefix_follows_its_data_directory(tmp_path):
    from core.redis_namespace import default_prefix

    db = dj_database_url.parse(f"postgresql://postgres:@/zhiku?host={tmp_path / 'one' / 'pgdata'}")
    one = default_prefix(db, embedded_data_dir=tmp_path / "one" / "pgdata")
    assert one == default_prefix(db, embedded_data_dir=tmp_path / "one" / ".." / "one" / "pgdata")
    assert one != default_prefix(db, embedded_data_dir=tmp_path / "two" / "pgdata")


@needs_redis
def test_the_channel_layers_of_two_installations_do_not_meet(monkeypatch, shared_redis):
    import asyncio

    from channels_redis.core import RedisChannelLayer

    def layer(database_url):
        conf = settings_for(monkeypatch, DATABASE_URL=database_url, REDIS_URL=REDIS_URL)
        return conf["ZHIKU_REDIS_PREFIX"], RedisChannelLayer(**conf["CHANNEL_LAYERS"]["default"]["CONFIG"])

    prefix_a, a = layer("postgres://u:p@db.example:5432/kb_a")
    prefix_b, b = layer("postgres://u:p@db.example:5432/kb_b")

    async def scenario():
        ours = await a.new_channel()
        await a.group_add("kb-1", ours)
        await b.group_send("kb-1", {"type": "chat.message", "text": "B"})  # B's group of the same name
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(a.receive(ours), 0.5)
        await a.group_send("kb-1", {"type": "chat.message", "text": "A"})
        assert (await asyncio.wait_for(a.receive(ours), 5))["text"] == "A"
        await a.flush()
        await b.flush()

    shared_redis.flushdb()
    loop = asyncio.new_event_loop()
    try:
        async def run_and_list():
            await a.group_add("kb-2", await a.new_channel())
            keys = [k.decode() for k in shared_redis.keys("*")]
            await scenario()
            return keys

        keys = loop.run_until_complete(run_and_list())
    finally:
        loop.close()
    assert keys and all(k.startswith(prefix_a + ":") for k in keys) and prefix_a != prefix_b
