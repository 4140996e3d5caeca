"""The BM25 index's machine tier (L0): one mapped file per machine, made once per version, shared by its processes."""
from __future__ import annotations

import fcntl

import numpy as np
import pytest

from knowledge.keyword_store import BM25IndexStore, keyword_store
from knowledge.models import BM25Index as BM25IndexRow
from knowledge.models import Chunk
from knowledge.retrieval.bm25_file import MachineCopies
from knowledge.services.chunks import chunk_update
from knowledge.services.search import kb_search_config

DOCS = {
    "price.md": "# 价格\n\n知库专业版的价格是每月一百元，企业版请联系销售。按年付款可以打八折。\n",
    "install.md": "# 安装\n\n安装知库需要 Python 3.11。运行 make run 即可在本机启动，无需单独安装数据库。\n",
    "refund.md": "# 退款\n\n购买后七天内可以无理由退款，退款在三个工作日内原路返回。\n",
}


@pytest.fixture
def loaded(kb, ingest):
    ingest(kb, DOCS)
    keyword_store().invalidate_local()
    kb.refresh_from_db()
    return kb


def _files(root) -> list[str]:
    return sorted(p.name for p in root.rglob("*.bm25"))


def _mapped(index) -> bool:
    cols = index.state_arrays()["cols"]
    return isinstance(cols, np.memmap) or isinstance(getattr(cols, "base", None), np.memmap)


@pytest.mark.django_db
def test_processes_of_one_machine_map_one_file_and_a_change_is_applied_once(loaded, tmp_path):
    machine = tmp_path / "machine"
    first, second = BM25IndexStore(directory=str(machine)), BM25IndexStore(directory=str(machine))
    BM25IndexRow.objects.filter(kb=loaded).delete()
    a = first.get_index(kb_search_config(loaded))
    assert first.last_source[loaded.pk] == "build" and _mapped(a)
    b = second.get_index(kb_search_config(loaded))
    assert second.last_source[loaded.pk] == "l0" and _mapped(b) and b.n_docs == a.n_docs == 3
    (only,) = _files(machine)
    assert only.startswith(f"v{loaded.version}-")

    chunk = Chunk.objects.get(kb=loaded, document__source_name="install.md")
    chunk_update(chunk=chunk, content="安装知库需要独角兽驱动程序。")
    loaded.refresh_from_db()
    updated = first.get_index(kb_search_config(loaded))
    assert first.last_source[loaded.pk] == "incremental"
    seen = second.get_index(kb_search_config(loaded))
    assert second.last_source[loaded.pk] == "l0"  # the other process maps the new file: no update of its own
    assert seen.search(["独角兽"], 1) == updated.search(["独角兽"], 1) and seen.search(["独角兽"], 1)[0][0] == chunk.pk
    assert _files(machine) == [f"v{loaded.version}-{only.split('-', 1)[1]}"]  # the old version's file is gone


@pytest.mark.django_db
def test_the_update_starts_from_the_machine_s_mapped_previous_version(loaded, tmp_path, monkeypatch):
    store = BM25IndexStore(directory=str(tmp_path / "machine"))
    store.get_index(kb_search_config(loaded))
    chunk = Chunk.objects.get(kb=loaded, document__source_name="refund.md")
    chunk_update(chunk=chunk, content="退款需要独角兽审批。")
    loaded.refresh_from_db()
    fresh = BM25IndexStore(directory=str(tmp_path / "machine"))  # a restarted worker: nothing in memory
    from knowledge.retrieval.bm25 import BM25Index

    monkeypatch.setattr(BM25Index, "from_bytes", classmethod(lambda cls, data: pytest.fail("decoded the row's blob")))
    index = fresh.get_index(kb_search_config(loaded))
    assert fresh.last_source[loaded.pk] == "incremental" and index.search(["独角兽"], 1)[0][0] == chunk.pk


@pytest.mark.django_db
def test_while_another_process_of_the_machine_builds_too_long_the_previous_version_serves(loaded, tmp_path):
    store = BM25IndexStore(directory=str(tmp_path / "machine"))
    store.stale_wait = 0.3
    old = store.get_index(kb_search_config(loaded))
    chunk_update(chunk=Chunk.objects.get(kb=loaded, document__source_name="price.md"), content="价格另议。")
    loaded.refresh_from_db()
    folder = MachineCopies(tmp_path / "machine", "x").root
    (lock_path,) = folder.rglob(".lock")
    with open(lock_path, "a+b") as other_process:  # another open file description: flock treats it as another holder
        fcntl.flock(other_process, fcntl.LOCK_EX)
        served = store.get_index(kb_search_config(loaded))
        assert served is old and store.last_source[loaded.pk] == "stale"
        fcntl.flock(other_process, fcntl.LOCK_UN)
    assert store.get_index(kb_search_config(loaded)) is not old and store.last_source[loaded.pk] == "incremental"


@pytest.mark.django_db
def test_a_damaged_machine_file_is_replaced_from_the_database_row(loaded, tmp_path):
    machine = tmp_path / "machine"
    BM25IndexStore(directory=str(machine)).get_index(kb_search_config(loaded))
    (path,) = machine.rglob("*.bm25")
    path.write_bytes(path.read_bytes()[:100])
    other = BM25IndexStore(directory=str(machine))
    index = other.get_index(kb_search_config(loaded))
    assert other.last_source[loaded.pk] == "l3" and index.n_docs == 3 and _mapped(index)
    assert len(path.read_bytes()) > 100


@pytest.mark.django_db
def test_without_a_machine_folder_the_index_lives_in_process_memory(loaded, tmp_path, settings):
    settings.ZHIKU_BM25_DIR = ""
    store = BM25IndexStore()
    BM25IndexRow.objects.filter(kb=loaded).delete()
    index = store.get_index(kb_search_config(loaded))
    assert store.last_source[loaded.pk] == "build" and not _mapped(index) and index.n_docs == 3
    store.get_index(kb_search_config(loaded))
    assert store.last_source[loaded.pk] == "l1"


@pytest.mark.django_db
def test_a_kb_recreated_with_the_same_id_and_version_does_not_map_the_old_one_s_file(loaded, tmp_path):
    machine = tmp_path / "machine"
    store = BM25IndexStore(directory=str(machine))
    store.get_index(kb_search_config(loaded))
    # A recreated database hands out the same id and version again: the KB's creation time tells them apart.
    from datetime import timedelta

    type(loaded).objects.filter(pk=loaded.pk).update(created_at=loaded.created_at + timedelta(seconds=1))
    Chunk.objects.filter(kb=loaded, document__source_name="price.md").update(tokens=["独角兽"])
    BM25IndexRow.objects.filter(kb=loaded).delete()
    loaded.refresh_from_db()  # the recreated KB's row, as a request reads it
    other = BM25IndexStore(directory=str(machine))
    index = other.get_index(kb_search_config(loaded))
    assert other.last_source[loaded.pk] == "build" and index.search(["独角兽"], 1)
    # A process that held the first KB's index does not serve it for the recreated one either.
    assert store.get_index(kb_search_config(loaded)).search(["独角兽"], 1)
    assert store.last_source[loaded.pk] != "l1"


@pytest.mark.django_db
def test_a_config_read_with_the_kbs_row_costs_no_query_and_an_older_one_is_served_the_newer_copy(
        loaded, tmp_path, django_assert_num_queries):
    store = BM25IndexStore(directory=str(tmp_path / "machine"))
    config = kb_search_config(loaded)
    assert config.life  # read from the row with the version: the store trusts both
    store.get_index(config)
    with django_assert_num_queries(0):
        store.get_index(config)
    chunk = Chunk.objects.get(kb=loaded, document__source_name="install.md")
    chunk_update(chunk=chunk, content="安装知库需要独角兽驱动程序。")
    loaded.refresh_from_db()
    newer = store.get_index(kb_search_config(loaded))
    assert newer.search(["独角兽"], 1)[0][0] == chunk.pk
    with django_assert_num_queries(0):  # a request that read the KB a moment before the change: the newer copy
        assert store.get_index(config) is newer
    from dataclasses import replace

    with django_assert_num_queries(1):  # no life: the store reads the version itself
        store.get_index(replace(config, life=""))
