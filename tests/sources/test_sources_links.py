"""Documents keep where they came from: search results, chat sources and citations, and the pages link to it."""
from __future__ import annotations

import pytest

from chat.prompts import citations_map, context_build
from knowledge.models import Document, DocumentStatus
from tests.helpers import searched

pytestmark = pytest.mark.django_db

TEXT = "# 保修\n\n蓝鲸牌水泵的保修期是三年，自购买之日起计算。"


@pytest.fixture
def synced(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"warranty": ("warranty.md", TEXT)}
    run_source(make_source(kb, name, alice))
    return Document.objects.get(kb=kb, status=DocumentStatus.READY)


def test_search_results_carry_the_source_url(kb, alice, synced, client_for, ingest):
    ingest(kb, {"manual.md": "# 说明\n\n蓝鲸牌水泵的保修需要发票。"})
    response = client_for(alice).post("/api/search/", {"query": "蓝鲸牌水泵保修期", "kb_ids": [kb.pk]}, format="json")
    assert response.status_code == 200, response.content
    urls = {r["document"]["source_name"]: r["document"]["source_url"] for r in response.json()["results"]}
    assert urls["warranty.md"] == "https://memory.example/warranty"
    assert urls.get("manual.md", "") == ""  # an upload has none
    listed = client_for(alice).get(f"/api/kbs/{kb.pk}/documents/").json()["results"]
    assert {d["source_name"]: d["source_url"] for d in listed}["warranty.md"] == "https://memory.example/warranty"


def test_chat_sources_and_citations_carry_the_source_url(kb, alice, synced):
    result = searched(user=alice, query="蓝鲸牌水泵的保修期是几年", kbs=[kb])
    context = context_build(result.candidates)
    payload = context.sources[0].payload()
    assert payload["document"]["source_url"] == "https://memory.example/warranty"
    citations = citations_map("保修期是三年 [1]。", context.sources)
    assert citations[0]["document"]["source_url"] == "https://memory.example/warranty"


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_document_page_links_to_its_original(kb, alice, synced, client, language):
    client.force_login(alice)
    html = client.get(f"/kbs/{kb.pk}/documents/{synced.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert 'id="doc-source"' in html and 'href="https://memory.example/warranty"' in html
    assert ("来自数据源" if language == "zh-hans" else "From the source:") in html
