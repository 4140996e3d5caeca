"""Dify's External Knowledge API (assistants/dify.py) against a real daphne on the test database, with real Redis,
sent field for field as Dify's ``ExternalDatasetService`` sends it: the registration probe (a POST with the key
and no body) and the retrieval (``Content-Type: application/json``, the bearer key, the JSON body as a string);
then the metadata conditions (assistants/dify_conditions.py) on their own."""
from __future__ import annotations

import io
import json
import uuid

import pytest
import requests

from assistants.dify_conditions import RECORD_FIELDS, condition_holds, metadata_condition
from assistants.keys import key_revoke
from assistants.services import assistant_key_create, kb_key_create
from core.errors import ApplicationError
from knowledge.models import Chunk, Document, Membership, Role
from knowledge.services.documents import document_fields_set
from tests.browser import daphne

LIVE = pytest.mark.django_db(transaction=True)  # the server in another process reads what the test wrote


@pytest.fixture(scope="module")
def live(tmp_path_factory, django_db_setup, django_db_blocker):
    env = {"REDIS_URL": "redis://127.0.0.1:6379/10", "ZHIKU_REDIS_PREFIX": f"test-dify-{uuid.uuid4().hex[:12]}"}
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("dify") / "daphne.log", **env) as url:
        yield f"{url}/dify"  # what the owner types as Dify's "API Endpoint"


def dify_probe(endpoint: str, api_key: str) -> requests.Response:
    """``check_endpoint_and_api_key``: POST ``{endpoint}/retrieval`` with only the bearer header."""
    return requests.post(f"{endpoint}/retrieval", headers={"Authorization": f"Bearer {api_key}"}, timeout=30)


def dify_retrieval(endpoint: str, api_key: str | None, knowledge_id, query: str, *, top_k: int = 4,
                   score_threshold: float = 0.0, metadata_condition: dict | None = None,
                   headers: dict | None = None) -> requests.Response:
    """``fetch_external_knowledge_retrieval``: the headers and the body, dumped to a string, as Dify builds them."""
    sent = {"Content-Type": "application/json"}
    if api_key:
        sent["Authorization"] = f"Bearer {api_key}"
    params = {"retrieval_setting": {"top_k": top_k, "score_threshold": score_threshold}, "query": query,
              "knowledge_id": knowledge_id}
    if metadata_condition:
        params["metadata_condition"] = metadata_condition
    return requests.post(f"{endpoint}/retrieval", data=json.dumps(params), headers=headers or sent, timeout=60)


def records(response: requests.Response) -> list[dict]:
    assert response.status_code == 200, response.text
    return response.json()["records"]


@LIVE
def test_the_registration_probe_with_a_good_key_is_a_400_and_with_a_wrong_one_a_403(live, alice, docs_kb):
    key = kb_key_create(user=alice, kb_id=docs_kb.pk)[1]
    probe = dify_probe(live, key)
    assert probe.status_code == 400 and probe.status_code not in (403, 404, 502)  # Dify saves the endpoint
    assert probe.json()["error_code"] == 400 and probe.json()["error_msg"]
    wrong = dify_probe(live, "zk-not-a-key")
    assert wrong.status_code == 403 and wrong.json()["error_code"] == 1002  # Dify: "Authorization failed"


@LIVE
def test_a_kb_key_retrieves_records_with_scores_titles_and_metadata(live, alice, docs_kb):
    key = kb_key_create(user=alice, kb_id=docs_kb.pk)[1]
    found = records(dify_retrieval(live, key, str(docs_kb.pk), "知库专业版的价格是多少？"))
    assert found and "9800" in found[0]["content"]
    scores = [r["score"] for r in found]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    first = found[0]
    assert set(first) == {"content", "score", "title", "metadata"} and first["title"]
    meta = first["metadata"]
    assert isinstance(meta, dict) and set(meta) == set(RECORD_FIELDS)  # no fields set: the record's own only
    assert Document.objects.get(pk=meta["document_id"]).kb_id == docs_kb.pk
    assert len(records(dify_retrieval(live, key, str(docs_kb.pk), "知库", top_k=1))) == 1


@LIVE
def test_records_below_the_score_threshold_are_dropped(live, alice, docs_kb):
    key = kb_key_create(user=alice, kb_id=docs_kb.pk)[1]
    everything = records(dify_retrieval(live, key, str(docs_kb.pk), "知库专业版的价格是多少？", top_k=10))
    assert len(everything) >= 2
    line = (everything[0]["score"] + everything[-1]["score"]) / 2
    kept = records(dify_retrieval(live, key, str(docs_kb.pk), "知库专业版的价格是多少？", top_k=10, score_threshold=line))
    assert kept and len(kept) < len(everything) and all(r["score"] >= line for r in kept)


@LIVE
def test_metadata_conditions_narrow_the_records(live, alice, docs_kb):
    key = kb_key_create(user=alice, kb_id=docs_kb.pk)[1]
    document_fields_set(document=Document.objects.get(kb=docs_kb, source_name="pro.md"),
                        fields={"category": "pricing", "year": 2026})
    document_fields_set(document=Document.objects.get(kb=docs_kb, source_name="install.md"),
                        fields={"category": "guide", "year": 2024})

    def titles(condition):
        found = records(dify_retrieval(live, key, str(docs_kb.pk), "知库的价格和安装", top_k=10,
                                       metadata_condition=condition))
        return {r["metadata"]["source_name"] for r in found}

    both = {"pro.md", "install.md"}
    assert titles(None) == both
    assert titles({"logical_operator": "and", "conditions": [
        {"name": "category", "comparison_operator": "is", "value": "pricing"}]}) == {"pro.md"}  # in SQL
    assert titles({"logical_operator": "and", "conditions": [
        {"name": "year", "comparison_operator": "<", "value": 2025}]}) == {"install.md"}
    assert titles({"logical_operator": "or", "conditions": [
        {"name": "category", "comparison_operator": "is", "value": "guide"},
        {"name": "year", "comparison_operator": "≥", "value": "2026"}]}) == both
    assert titles({"logical_operator": "and", "conditions": [
        {"name": "category", "comparison_operator": "not contains", "value": "pric"},
        {"name": "owner", "comparison_operator": "empty", "value": None}]}) == {"install.md"}


@LIVE
def test_an_assistant_key_reaches_its_own_kbs_only(live, alice, assistant, docs_kb, make_kb, ingest):
    other = make_kb(alice, "另一个")
    ingest(other, {"travel.md": "# 报销\n\n差旅报销须在出差结束后 30 天内提交。\n"})
    key = assistant_key_create(user=alice, assistant=assistant)[1]
    assert records(dify_retrieval(live, key, str(docs_kb.pk), "知库专业版的价格是多少？"))
    refused = dify_retrieval(live, key, str(other.pk), "差旅报销多久内提交？")
    assert refused.status_code == 404 and refused.json()["error_code"] == 2001
    kb_key = kb_key_create(user=alice, kb_id=docs_kb.pk)[1]
    assert dify_retrieval(live, kb_key, str(other.pk), "差旅报销").json()["error_code"] == 2001
    assert dify_retrieval(live, kb_key, "999999999", "差旅报销").json()["error_code"] == 2001


@LIVE
def test_a_kb_its_keys_creator_lost_does_not_exist_for_the_key(live, alice, bob, make_kb, ingest):
    shared = make_kb(bob, "Bob 共享")
    ingest(shared, {"travel.md": "# 报销\n\n差旅报销须在出差结束后 30 天内提交。\n"})
    Membership.objects.create(kb=shared, user=alice, role=Role.OWNER)
    key = kb_key_create(user=alice, kb_id=shared.pk)[1]
    assert records(dify_retrieval(live, key, str(shared.pk), "差旅报销多久内提交？"))
    Membership.objects.filter(kb=shared, user=alice).delete()
    gone = dify_retrieval(live, key, str(shared.pk), "差旅报销多久内提交？")
    assert gone.status_code == 404 and gone.json()["error_code"] == 2001 and "30 天" not in gone.text


@LIVE
def test_header_key_and_body_errors_are_difys_error_objects(live, alice, docs_kb):
    row, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    kb = str(docs_kb.pk)
    no_header = dify_retrieval(live, None, kb, "价格")
    assert no_header.status_code == 403 and no_header.json()["error_code"] == 1001
    basic = dify_retrieval(live, None, kb, "价格", headers={"Content-Type": "application/json", "Authorization": "Basic eA=="})
    assert basic.json()["error_code"] == 1001
    for bad in ({"top_k": 0, "score_threshold": 0}, {"top_k": 3, "score_threshold": 2}, "5"):
        sent = requests.post(f"{live}/retrieval", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                             json={"knowledge_id": kb, "query": "价格", "retrieval_setting": bad})
        assert sent.status_code == 400 and sent.json()["code"] == "invalid_retrieval_request"
    assert dify_retrieval(live, key, "第一个", "价格").json()["code"] == "invalid_retrieval_request"
    assert dify_retrieval(live, key, kb, " ").json()["code"] == "empty_question"
    bad_condition = dify_retrieval(live, key, kb, "价格", metadata_condition={
        "conditions": [{"name": "year", "comparison_operator": "between", "value": 1}]})
    assert bad_condition.status_code == 400 and bad_condition.json()["error_code"] == 400
    key_revoke(key=row)
    revoked = dify_retrieval(live, key, kb, "价格")
    assert revoked.status_code == 403 and revoked.json()["error_code"] == 1002


FIELDS = {"category": "pricing", "year": 2026}


def _record_of_pro(live, key, kb) -> dict:
    found = records(dify_retrieval(live, key, str(kb.pk), "知库专业版的价格是多少？", top_k=10))
    return next(r for r in found if r["metadata"]["source_name"] == "pro.md" and "9800" in r["content"])


@LIVE
@pytest.mark.parametrize("name", [*RECORD_FIELDS, *FIELDS])
def test_a_condition_on_each_field_a_record_shows_finds_the_record_by_its_value(live, alice, docs_kb, name):
    """Every field of a record's ``metadata`` (the record's own and the document's fields) can be named: ``is`` its
    value returns the record, ``is`` another value does not."""
    pro = Document.objects.get(kb=docs_kb, source_name="pro.md")
    Document.objects.filter(pk=pro.pk).update(source_url="https://example.com/pro")
    Chunk.objects.filter(document=pro).update(page_start=2, page_end=2)
    document_fields_set(document=pro, fields=FIELDS)  # bumps the KB's version: no search cached before is read
    key = kb_key_create(user=alice, kb_id=docs_kb.pk)[1]
    target = _record_of_pro(live, key, docs_kb)
    assert set(target["metadata"]) == set(RECORD_FIELDS) | set(FIELDS)
    value = target["metadata"][name]
    assert value not in (None, "")

    def chunk_ids(wanted) -> set[int]:
        found = records(dify_retrieval(live, key, str(docs_kb.pk), "知库专业版的价格是多少？", top_k=10,
                                       metadata_condition={"logical_operator": "and", "conditions": [
                                           {"name": name, "comparison_operator": "is", "value": wanted}]}))
        assert all(r["metadata"][name] == wanted for r in found)
        return {r["metadata"]["chunk_id"] for r in found}

    assert target["metadata"]["chunk_id"] in chunk_ids(value)
    other = value + 1000 if isinstance(value, int) else f"{value}-其他"
    assert target["metadata"]["chunk_id"] not in chunk_ids(other)


@LIVE
def test_a_record_shows_the_document_s_own_fields_and_nothing_ingestion_wrote(live, alice, make_kb, ingest):
    import docx

    kb = make_kb(alice, "手册")
    document = docx.Document()  # python-docx writes its own name as the file's author
    document.add_heading("保修政策", level=1)
    document.add_paragraph("整车保修两年，电池保修一年，人为损坏不在保修范围内。")
    buffer = io.BytesIO()
    document.save(buffer)
    manual = ingest(kb, {"warranty.docx": buffer.getvalue()})[0]
    assert manual.metadata.get("author") == "python-docx" and "timings_ms" in manual.metadata  # what must not show
    document_fields_set(document=manual, fields={"product": "XK-300", "tags": ["保修", "售后"]})
    key = kb_key_create(user=alice, kb_id=kb.pk)[1]
    found = records(dify_retrieval(live, key, str(kb.pk), "电池保修多久？"))
    assert found
    for record in found:
        meta = record["metadata"]
        assert set(meta) == set(RECORD_FIELDS) | {"product", "tags"}, meta
        assert meta["product"] == "XK-300" and meta["title"] and meta["chunk_type"] in ("text", "table")
    internals = set(manual.metadata) - {"fields"}
    assert {"author", "timings_ms", "embeddings_reused"} <= internals
    assert not internals & {key for record in found for key in record["metadata"]}
    tagged = records(dify_retrieval(live, key, str(kb.pk), "电池保修多久？", metadata_condition={
        "conditions": [{"name": "tags", "comparison_operator": "contains", "value": "售后"}]}))
    assert [r["metadata"]["chunk_id"] for r in tagged] == [r["metadata"]["chunk_id"] for r in found]
    assert records(dify_retrieval(live, key, str(kb.pk), "电池保修多久？", metadata_condition={
        "conditions": [{"name": "author", "comparison_operator": "is", "value": "python-docx"}]})) == []


# --- the conditions on their own (no server) -------------------------------------------------------------------------

META = {"tags": ["价格", "专业版"], "score": 7, "category": "pricing", "year": 2026, "published": "2026-03-01",
        "note": ""}


@pytest.mark.parametrize("operator, name, value, expected", [
    ("is", "category", "pricing", True), ("is not", "category", "pricing", False),
    ("contains", "category", "ric", True), ("not contains", "category", "ric", False),
    ("contains", "tags", "价格", True), ("contains", "tags", "价", False),
    ("start with", "category", "pri", True), ("end with", "category", "ing", True), ("end with", "category", "x", False),
    ("empty", "note", None, True), ("empty", "missing", None, True), ("not empty", "category", None, True),
    ("not empty", "note", None, False),
    ("=", "year", "2026", True), ("≠", "year", 2026, False), (">", "score", 5, True), ("<", "score", 5, False),
    ("≥", "year", 2026, True), ("≤", "year", 2025, False), (">", "category", 1, False),
    ("in", "category", ["pricing", "guide"], True), ("not in", "category", ["guide"], True),
    ("before", "published", "2026-06-01", True), ("after", "published", "2026-06-01", False),
])
def test_each_operator_on_a_record_s_metadata(operator, name, value, expected):
    parsed = metadata_condition({"conditions": [{"name": name, "comparison_operator": operator, "value": value}]})
    assert condition_holds(parsed.conditions[0], META) is expected


def test_is_under_and_narrows_the_search_first_and_every_condition_is_tested_on_the_record():
    both = metadata_condition({"logical_operator": "and", "conditions": [
        {"name": "category", "comparison_operator": "is", "value": "pricing"},
        {"name": "year", "comparison_operator": ">", "value": 2020}]})
    assert both.pushed_down() == (("category", "pricing"),)
    assert both.holds({"category": "pricing", "year": 2021}) and not both.holds({"category": "guide", "year": 2021})
    either = metadata_condition({"logical_operator": "or", "conditions": both_conditions(both)})
    assert either.pushed_down() == ()
    assert either.holds({"category": "guide", "year": 2021}) and not both.holds({"year": 2019})


def both_conditions(parsed):
    return [{"name": c.names[0], "comparison_operator": c.operator, "value": c.value} for c in parsed.conditions]


@pytest.mark.parametrize("raw", [
    "and", {"logical_operator": "xor", "conditions": []}, {"conditions": "year"},
    {"conditions": [{"name": "", "comparison_operator": "is", "value": "x"}]},
    {"conditions": [{"name": "year", "comparison_operator": "is"}]},
    {"conditions": [{"name": "year", "comparison_operator": "is", "value": {"a": 1}}]},
    {"conditions": [{"name": "y", "comparison_operator": "is", "value": "v"}] * 33},
])
def test_a_malformed_condition_is_refused(raw):
    with pytest.raises(ApplicationError) as refused:
        metadata_condition(raw)
    assert refused.value.code == "invalid_retrieval_request"
