"""kb_eval / chat_eval --files: a folder of a person's files uploaded through the platform's ingestion, then measured."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from knowledge.models import Chunk, Document, DocumentStatus

RETURNS = ("骁途售后服务政策\r\n\r\n第一章 退换货\r\n\r\n"
           "第三条 自签收之日起7日内，车辆未骑行、包装齐全的，可以无理由退货。\r\n\r\n"
           "第四条 无理由退货的，运费由消费者承担；因质量问题退货的，运费由骁途承担。\r\n")
QUESTIONS = [
    ("q1", "E7充电要多长时间", ["spec.docx"], ["6至8小时"]),
    ("q2", "无理由退货的运费由谁承担", ["returns"], ["运费由消费者承担"]),  # a file named by its stem
    ("q3", "火星上有水吗", [], []),
]


def spec_docx() -> bytes:
    """A small Word manual: a heading, a sentence and a parameter table."""
    import docx

    document = docx.Document()
    document.add_heading("技术参数", level=1)
    document.add_paragraph("下表列出E5和E7电动自行车的主要技术参数。")
    rows = [["参数", "E5", "E7"], ["续航里程", "约60公里", "约90公里"], ["充电时间", "6至8小时", "6至8小时"],
            ["电机功率", "350W", "400W"]]
    table = document.add_table(rows=len(rows), cols=3)
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@pytest.fixture
def folder(tmp_path):
    files = tmp_path / "kbfiles"
    files.mkdir()
    (files / "spec.docx").write_bytes(spec_docx())
    (files / "returns.txt").write_bytes(RETURNS.encode("gbk"))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join(json.dumps({"id": i, "text": t, "relevant": r, "answers": a}, ensure_ascii=False)
                                 for i, t, r, a in QUESTIONS), encoding="utf-8")
    return ["--files", str(files), "--queries", str(queries)]


def run(capsys, command: str, *args) -> dict:
    call_command(command, *args, "--json")
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.django_db
def test_kb_eval_loads_a_folder_of_files_and_finds_the_relevant_file(folder, capsys):
    metrics = run(capsys, "kb_eval", *folder, "--kb", "files", "--per-query")
    assert (metrics["queries"], metrics["answerable"], metrics["unanswerable"]) == (3, 2, 1)
    assert metrics["recall@10"] == 1.0  # both relevant files found, one named by file name, one by stem
    top = {q["id"]: q["top"] for q in metrics["per_query"]}
    assert top["q1"][0] == "spec.docx" and top["q2"][0] == "returns"
    documents = Document.objects.filter(kb__name="files")
    assert sorted(documents.values_list("source_name", "doc_type", "status")) == [
        ("returns.txt", "text", DocumentStatus.READY), ("spec.docx", "docx", DocumentStatus.READY)]
    # Read as uploads are: the GBK text decoded, the Word table read into the chunks.
    assert documents.get(source_name="returns.txt").metadata["encoding"].lower() in {"gb18030", "gbk"}
    assert any("6至8小时" in c for c in Chunk.objects.filter(document__source_name="spec.docx").values_list("content", flat=True))

    # The same bytes again: nothing re-ingested; a changed file becomes its next version.
    versions = dict(documents.values_list("source_name", "pk"))
    run(capsys, "kb_eval", *folder, "--kb", "files")
    assert dict(documents.values_list("source_name", "pk")) == versions
    files = folder[1]
    with open(f"{files}/returns.txt", "ab") as f:
        f.write("\r\n第五条 退款在7个工作日内原路退回。\r\n".encode("gbk"))
    run(capsys, "kb_eval", *folder, "--kb", "files")
    serving = documents.filter(status=DocumentStatus.READY)
    assert serving.count() == 2 and serving.get(source_name="returns.txt").version == 2
    assert serving.get(source_name="spec.docx").pk == versions["spec.docx"]


@pytest.mark.django_db
def test_dropping_a_relevant_file_leaves_it_out_and_its_question_unanswerable(folder, capsys):
    metrics = run(capsys, "kb_eval", *folder, "--kb", "files-dropped", "--drop-relevant", "1")
    assert (metrics["answerable"], metrics["unanswerable"]) == (1, 2)
    assert Document.objects.filter(kb__name="files-dropped").count() == 1


@pytest.mark.django_db
def test_corpus_and_files_are_one_or_the_other(folder, tmp_path):
    with pytest.raises(CommandError, match="not allowed with"):
        call_command("kb_eval", *folder, "--corpus", str(tmp_path / "corpus.jsonl"))
    with pytest.raises(CommandError, match="one of the arguments --corpus --files is required"):
        call_command("kb_eval", *folder[2:])
    with pytest.raises(CommandError, match="No folder"):
        call_command("kb_eval", "--files", str(tmp_path / "missing"), *folder[2:])


@pytest.mark.django_db(transaction=True)
def test_chat_eval_answers_from_a_folder_of_files(folder, capsys):
    metrics = run(capsys, "chat_eval", *folder, "--kb", "files-chat", "--per-query")
    assert (metrics["questions"], metrics["answerable"], metrics["unanswerable"]) == (3, 2, 1)
    outcomes = {q["id"]: q for q in metrics["per_query"]}
    assert outcomes["q2"]["hit"] and outcomes["q2"]["contains"]
    assert not outcomes["q3"]["hit"]
