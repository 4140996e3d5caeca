"""Issue 47 item 5: the API reference in the reader's language. /api/schema/ (and so /api/docs/ and /api/redoc/,
which read it) states its title, description, tags and every operation's summary in Chinese by default and in
English on request (Accept-Language, or the language switch's cookie), generated per request (config/openapi.py);
codes, paths and field names stay as they are, and the Chinese schema is a valid OpenAPI document."""
from __future__ import annotations

import re

import pytest
from openapi_spec_validator import validate
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

CJK = re.compile(r"[\u4e00-\u9fff]")
# What may stay Latin in a Chinese sentence: names of fields, codes, products and protocols.
LITERAL = re.compile(r"`[^`]*`|\b(?:[a-z]+_[a-z_]+|user_id|api_key|kb_ids|q|n|id|openai|SDK|API|JSON|Schema|token|"
                     r"Server-Sent Events|keep_documents|source_run_active|FAQ|zhiku|docs/[a-z./]+|\d+)\b")
OPENAPI_JSON = "application/vnd.oai.openapi+json"


def schema(**headers) -> dict:
    response = APIClient().get("/api/schema/", HTTP_ACCEPT=OPENAPI_JSON, **headers)
    assert response.status_code == 200, response.content[:300]
    return response.json()


def operations(document: dict) -> dict[str, dict]:
    return {f"{method.upper()} {path}": operation for path, ops in document["paths"].items()
            for method, operation in ops.items() if isinstance(operation, dict) and "responses" in operation}


def english_words(text: str) -> list[str]:
    """Runs of two or more English words left in ``text`` once literals (codes, field names) are set aside."""
    return re.findall(r"[A-Za-z]{2,}(?:[ ,'-]+[A-Za-z]{2,})+", LITERAL.sub(" ", text))


def test_every_summary_and_tag_is_chinese_by_default():
    zh, en = operations(schema()), operations(schema(HTTP_ACCEPT_LANGUAGE="en"))
    assert zh.keys() == en.keys() and len(zh) > 100
    untranslated = {label: op.get("summary") for label, op in zh.items()
                    if not op.get("summary") or not CJK.search(op["summary"]) or english_words(op["summary"])
                    or op["summary"] == en[label].get("summary")}
    assert untranslated == {}
    tags = {tag for op in zh.values() for tag in op["tags"]}
    assert all(CJK.search(tag) for tag in tags), tags
    assert {"知识库", "应用", "数据源", "审计日志"} <= tags
    document = schema()
    assert document["info"]["title"] == "知库 API" and CJK.search(document["info"]["description"])
    assert [t["name"] for t in document["tags"]][0] == "知识库"  # shown in TAGS' order, not alphabetically


def test_english_on_request_by_header_or_by_the_language_switch():
    en = schema(HTTP_ACCEPT_LANGUAGE="en")
    ops = operations(en)
    assert ops["POST /api/kbs/"]["summary"] == "Create a knowledge base (the caller owns it)"
    assert ops["POST /api/kbs/"]["tags"] == ["Knowledge bases"]
    assert ops["POST /api/chat/stream/"]["summary"] == "Ask a question and receive the answer as Server-Sent Events"
    assert en["info"]["title"] == "zhiku API"
    leftover = {label: op["summary"] for label, op in ops.items() if CJK.search(op.get("summary", ""))
                or CJK.search(op.get("description", "")) or any(CJK.search(t) for t in op["tags"])}
    assert leftover == {}
    # The console's language switch (its cookie) wins over the browser's header, as on every page.
    client = APIClient()
    client.cookies["django_language"] = "en"
    cookie = client.get("/api/schema/", HTTP_ACCEPT=OPENAPI_JSON, HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert operations(cookie)["POST /api/kbs/"]["summary"] == "Create a knowledge base (the caller owns it)"
    # drf-spectacular's ?lang= names the language in the URL (docs/api.md).
    by_query = APIClient().get("/api/schema/?lang=en&format=json")
    assert operations(by_query.json())["POST /api/kbs/"]["summary"] == "Create a knowledge base (the caller owns it)"


def test_one_language_does_not_leak_into_the_next_request():
    """Nothing caches the schema across languages: zh, en, zh again, each in its own."""
    first, second, third = schema(), schema(HTTP_ACCEPT_LANGUAGE="en"), schema(HTTP_ACCEPT_LANGUAGE="zh-CN")
    label = "DELETE /api/kbs/{kb_id}/"
    assert operations(first)[label]["summary"] == operations(third)[label]["summary"] == "删除知识库及其全部内容（所有者）"
    assert operations(second)[label]["summary"] == "Delete the knowledge base and everything in it (owner)"


def test_only_the_words_change_with_the_language():
    zh, en = schema(), schema(HTTP_ACCEPT_LANGUAGE="en")
    zo, eo = operations(zh), operations(en)
    assert {label: op["operationId"] for label, op in zo.items()} == {label: op["operationId"] for label, op in eo.items()}
    assert zh["components"]["schemas"].keys() == en["components"]["schemas"].keys()
    assert zo["POST /api/kbs/"]["responses"].keys() == eo["POST /api/kbs/"]["responses"].keys()


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_schema_is_valid_openapi_in_each_language(language):
    validate(schema(HTTP_ACCEPT_LANGUAGE=language))
