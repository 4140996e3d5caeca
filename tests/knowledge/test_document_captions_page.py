"""Issue 38 item 6: an XLSX's title rows and sheet name, and a DOCX table's caption, show on the document page."""
from __future__ import annotations

import pytest

from knowledge.models import Document
from tests.knowledge.parsers.test_titles_captions import _docx_with_captions, price_xlsx

pytestmark = pytest.mark.django_db


def test_the_document_page_shows_each_tables_caption(client, alice, kb, ingest):
    ingest(kb, {"报价.xlsx": price_xlsx(), "采购说明.docx": _docx_with_captions()})
    client.force_login(alice)
    xlsx = Document.objects.get(source_name="报价.xlsx")
    html = client.get(f"/kbs/{kb.pk}/documents/{xlsx.pk}/").content.decode()
    assert "表格：价格表 · 报价单（含税） 生效日期：2026-01-01" in html
    docx = Document.objects.get(source_name="采购说明.docx")
    html = client.get(f"/kbs/{kb.pk}/documents/{docx.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Table: 表1 设备单价一览" in html and "Table: 耗材单价" in html
    assert docx.chunks.filter(content="表1 设备单价一览").count() == 0
