"""Issue 45: the API refuses what its schema does not allow (Schemathesis' negative cases were accepted): a query
parameter it does not declare or one given twice (core/api/query.py), an empty value where a format is stated, a
value outside a parameter's choices or length, and a JSON value of the wrong type for its field."""
from __future__ import annotations

import pytest

from assistants.services import assistant_create

pytestmark = pytest.mark.django_db


def error(response) -> tuple[int, str, dict]:
    body = response.json()["error"]
    return response.status_code, body["code"], body.get("fields", {})


def test_a_query_parameter_the_operation_does_not_declare_is_400(client_for, alice, kb):
    status, code, fields = error(client_for(alice).get(f"/api/kbs/{kb.pk}/documents/?colour=red&page=1"))
    assert (status, code) == (400, "unknown_parameter") and list(fields) == ["colour"]
    status, code, _ = error(client_for(alice).delete(f"/api/kbs/{kb.pk}/?force=1"))
    assert (status, code) == (400, "unknown_parameter")
    assert client_for(alice).get(f"/api/kbs/{kb.pk}/documents/?page=1&page_size=5").status_code == 200


def test_a_parameter_that_takes_one_value_given_twice_is_400(client_for, alice, kb):
    status, code, fields = error(client_for(alice).get("/api/kbs/?page_size=5&page_size=50"))
    assert (status, code) == (400, "repeated_parameter") and list(fields) == ["page_size"]


def test_the_refusal_speaks_the_requests_language(client_for, alice):
    response = client_for(alice).get("/api/kbs/?colour=red", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "未知的查询参数" in response.json()["error"]["message"]


def test_an_empty_time_is_refused_where_the_schema_gives_a_format(client_for, alice, kb, make_user):
    staff = make_user("sam", superuser=True)
    status, code, fields = error(client_for(staff).get("/api/audit/?until="))
    assert status == 400 and "until" in fields, code
    assistant = assistant_create(owner=alice, name="a", kb_ids=[kb.pk])
    status, _, fields = error(client_for(alice).get(f"/api/assistants/{assistant.pk}/usage/?since="))
    assert status == 400 and "since" in fields
    assert client_for(alice).get(f"/api/assistants/{assistant.pk}/usage/?since=2026-01-01T00:00:00Z").status_code == 200


def test_a_value_outside_a_parameters_choices_or_length_is_400(client_for, alice, kb, make_user, ingest):
    chunk = ingest(kb, {"a.md": "# 标题\n\n一段文字。"})[0].chunks.first()
    status, _, fields = error(client_for(alice).get(f"/api/kbs/{kb.pk}/chunks/{chunk.pk}/?include=AAA"))
    assert status == 400 and "include" in fields
    assert client_for(alice).get(f"/api/kbs/{kb.pk}/chunks/{chunk.pk}/?include=tokens").status_code == 200
    staff = make_user("sam", superuser=True)
    status, _, fields = error(client_for(staff).get("/api/people/users/?q=" + "0" * 101))
    assert status == 400 and "q" in fields


@pytest.mark.parametrize("value", [0, 1, "true", "yes"])
def test_a_json_boolean_is_true_or_false_and_a_number_is_a_number(client_for, alice, kb, ingest, value):
    chunk = ingest(kb, {"a.md": "# 标题\n\n一段文字。"})[0].chunks.first()
    status, code, fields = error(client_for(alice).patch(f"/api/kbs/{kb.pk}/chunks/{chunk.pk}/", {"enabled": value},
                                                         format="json"))
    assert (status, code) == (400, "invalid") and "enabled" in fields
    status, _, fields = error(client_for(alice).patch(f"/api/kbs/{kb.pk}/", {"top_k": "5", "score_threshold": False},
                                                      format="json"))
    assert status == 400 and set(fields) == {"top_k", "score_threshold"}
    assert client_for(alice).patch(f"/api/kbs/{kb.pk}/chunks/{chunk.pk}/", {"enabled": False}, format="json").status_code == 200
    assert client_for(alice).patch(f"/api/kbs/{kb.pk}/", {"top_k": 5}, format="json").status_code == 200


def test_an_empty_page_is_refused_as_a_page_that_is_not_a_number(client_for, alice, kb):
    """The schema's ``page`` is an integer; DRF read ``page=`` as page 1 (Schemathesis' negative case, accepted)."""
    client = client_for(alice)
    for query in ("page=", "page=abc"):
        status, code, _ = error(client.get(f"/api/kbs/?{query}"))
        assert status == 404 and code == "not_found", query
    assert client.get("/api/kbs/?page=1").status_code == 200
