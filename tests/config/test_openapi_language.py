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


# --- the descriptions: operations', parameters', request bodies', responses' and the components' ---------------

ENUM_LINE = re.compile(r"^\s*\* `[^`]*` - .*$")  # drf-spectacular's list of an enum's values: codes, never translated
# Beside LITERAL, what a Chinese description may quote as it is: paths, HTTP header names, JSON shapes, constants.
QUOTED = re.compile(r"/api/[a-z{}_/-]+|\b[A-Z][a-z]+(?:-[A-Z][a-z]+)+\b|\{[^}]*\}|\[[^\]]*\]|\b[A-Z][A-Z0-9_]+\*?|App ID")


def descriptions(document: dict) -> dict[str, str]:
    """Every description of the schema by where it is: each operation's, its parameters', request body's and
    responses', and every one under components (schemas, their fields at any depth, security schemes)."""
    found: dict[str, str] = {}

    def walk(node, where: str, names: bool = False) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if names:
                    walk(value, f"{where}.{key}")
                elif key == "description" and isinstance(value, str):
                    found[where] = value
                elif key not in ("example", "examples", "default", "enum"):
                    walk(value, f"{where}.{key}", names=key == "properties")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{where}[{item.get('name', i) if isinstance(item, dict) else i}]")

    for label, operation in operations(document).items():
        walk({k: operation[k] for k in ("description", "parameters", "requestBody", "responses") if k in operation}, label)
    walk(document["components"], "components")
    return found


def english_left(text: str) -> list[str]:
    """The paragraphs of ``text`` (lines, for a list) that are still English: no Chinese, or English words left
    once codes, field names and quoted literals are set aside. An enum's value list is code and stays."""
    left = []
    for paragraph in text.split("\n\n"):
        lines = [line for line in paragraph.split("\n") if line.strip() and not ENUM_LINE.match(line)]
        units = lines if any(line.lstrip().startswith("- ") for line in lines) else ["\n".join(lines)] if lines else []
        left += [unit for unit in units if not CJK.search(unit) or english_words(QUOTED.sub(" ", unit))]
    return left


def test_every_description_is_chinese_by_default():
    document = schema()
    zh, en = descriptions(document), descriptions(schema(HTTP_ACCEPT_LANGUAGE="en"))
    assert zh.keys() == en.keys()
    ops = operations(document)
    assert len({op["description"] for op in ops.values() if op.get("description")}) >= 36 and len(zh) > 300
    untranslated = {label: left for label, text in zh.items() if (left := english_left(text))}
    assert untranslated == {}
    assert ops["POST /api/auth/token/"]["description"].startswith("每次调用签发一个新令牌")
    assert "ZHIKU_TOKEN_TTL_DAYS" in ops["POST /api/auth/token/"]["description"]  # names of settings stay
    assert ops["GET /api/kbs/{kb_id}/health/"]["description"] == (
        "被答复「未找到」或不确定的问题（归并分组，附次数、最近提问时间和找到的最佳段落），\n"
        "最常问的问题，以及按原因统计的 👎；均来自检索过此知识库的对话（仅所有者）。")


def test_appended_rules_and_enum_values_are_translated_line_by_line():
    """core.api.schema appends "Rules across fields:" and its rules to a component's own description, and
    drf-spectacular an enum's values to a parameter's: each rule is translated, each value stays a code."""
    zh, en = schema()["components"]["schemas"], schema(HTTP_ACCEPT_LANGUAGE="en")["components"]["schemas"]
    upload = [name for name, s in zh.items() if "跨字段规则：" in s.get("description", "")
              and "chunk_overlap 至多为 chunk_size 的一半" in s["description"]]
    assert upload, "no component states the chunking rule in Chinese"
    assert zh[upload[0]]["description"].endswith(
        "跨字段规则：\n- chunk_overlap 至多为 chunk_size 的一半（chunk_size 省略时按其默认值）。（400 `invalid_chunking`）")
    assert en[upload[0]]["description"].endswith(
        "Rules across fields:\n- chunk_overlap is at most half of chunk_size (its default when left out). (400 `invalid_chunking`)")
    action = next(p for p in operations(schema())["GET /api/audit/"]["parameters"] if p["name"] == "action")
    first, values = action["description"].split("\n\n", 1)
    assert first == "一种操作（如 document.delete），或某类对象的全部操作（如 document）"
    assert "* `document.delete` - document.delete" in values.split("\n")


def test_descriptions_stay_english_in_english():
    """Also after a Chinese one: a hook's parts that are module constants (chat.openapi.ASK) are copied, not
    translated in place for every later request."""
    assert CJK.search(operations(schema())["POST /api/chat/stream/"]["requestBody"]["content"]["application/json"]
                      ["schema"]["description"])
    en = descriptions(schema(HTTP_ACCEPT_LANGUAGE="en"))
    # Chinese may appear quoted as data (a synonyms example: [["价格","售价"]]), never as the words around it.
    assert {label: text for label, text in en.items() if CJK.search(re.sub(r'"[^"]*"', "", text))} == {}
    ops = operations(schema(HTTP_ACCEPT_LANGUAGE="en"))
    assert ops["POST /api/auth/token/"]["description"].startswith(
        "Each call issues a new token (a user may hold several: one per client); the key is shown this once")
    assert ops["POST /api/chat/stream/"]["responses"]["200"]["description"].startswith("One frame per event")
