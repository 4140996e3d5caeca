"""Who reads which entries (in the query), the API's filters and refusals, the page and its CSV export."""
from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from audit.export import cell
from audit.models import AuditEntry
from core.audit import Action, record
from core.audit.context import acting
from knowledge.services.kbs import membership_remove, membership_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def log(alice, bob, make_kb):
    """Two KBs (alice's, bob's), an entry in each and one of no KB."""
    alice_kb, bob_kb = make_kb(alice, "Alice KB"), make_kb(bob, "Bob KB")
    with acting(actor=alice, address="192.0.2.1"):
        a = record(Action.DOCUMENT_DELETE, kb=alice_kb, object_repr="=HYPERLINK(\"http://evil\")",
                   changes={"source_name": "+cmd.md"})
    with acting(actor=bob, address="192.0.2.2"):
        b = record(Action.KB_UPDATE, kb=bob_kb, changes={"top_k": [5, 8]})
        s = record(Action.SIGN_IN, changes={"method": "password"})
    return {"alice_kb": alice_kb, "bob_kb": bob_kb, "a": a, "b": b, "s": s}


def ids(response) -> set[int]:
    assert response.status_code == 200, response.content
    return {e["id"] for e in response.json()["results"]}


def mine(response, log) -> set[int]:
    """The fixture's entries among those answered (set-up writes entries of its own: users, KBs)."""
    return ids(response) & {log[k].pk for k in ("a", "b", "s")}


def test_an_owner_reads_only_their_kbs_entries(client_for, alice, log):
    response = client_for(alice).get("/api/audit/")
    assert mine(response, log) == {log["a"].pk}
    assert {e["kb"] for e in response.json()["results"]} == {log["alice_kb"].pk}


def test_staff_read_everything(client_for, make_user, log):
    staff = make_user("root", superuser=True)
    assert mine(client_for(staff).get("/api/audit/?page_size=100"), log) == {log["a"].pk, log["b"].pk, log["s"].pk}


def test_viewers_and_editors_read_nothing(client_for, make_user, log):
    carol = make_user("carol")
    membership_set(kb=log["alice_kb"], role="editor", user=carol)
    assert mine(client_for(carol).get("/api/audit/"), log) == set()


def test_an_owner_through_a_membership_loses_the_entries_with_the_role(client_for, make_user, log):
    carol = make_user("carol")
    membership = membership_set(kb=log["alice_kb"], role="owner", user=carol)
    api = client_for(carol)
    assert log["a"].pk in ids(api.get("/api/audit/"))
    membership_remove(membership=membership)
    assert log["a"].pk not in ids(api.get("/api/audit/"))


def test_filters(client_for, make_user, log):
    api = client_for(make_user("root", superuser=True))
    assert mine(api.get(f"/api/audit/?kb={log['bob_kb'].pk}"), log) == {log["b"].pk}
    assert mine(api.get("/api/audit/?actor=alice"), log) == {log["a"].pk}
    assert mine(api.get("/api/audit/?action=kb.update"), log) == {log["b"].pk}
    assert mine(api.get("/api/audit/?action=document"), log) == {log["a"].pk}
    later = (timezone.now() + timedelta(minutes=5)).isoformat()
    assert mine(api.get("/api/audit/", {"until": later, "actor": "bob"}), log) == {log["b"].pk, log["s"].pk}
    assert mine(api.get("/api/audit/", {"since": later}), log) == set()
    entry = next(e for e in api.get("/api/audit/?actor=bob&action=kb.update").json()["results"])
    assert {k: entry[k] for k in ("actor", "action", "kb", "kb_name", "address", "changes", "object_type")} == {
        "actor": "bob", "action": "kb.update", "kb": log["bob_kb"].pk, "kb_name": "Bob KB", "address": "192.0.2.2",
        "changes": {"top_k": [5, 8]}, "object_type": ""}


@pytest.mark.parametrize("query, code", [
    ("kb=abc", "invalid_audit_filter"), ("kb=0", "invalid_audit_filter"), ("action=document.burn", "invalid_audit_filter"),
    ("since=yesterday", "invalid_audit_filter"), ("since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z", "invalid_time_range"),
    ("page_size=1000", "invalid_page_size"),
])
def test_bad_filters_are_400_with_a_code(client_for, alice, query, code):
    response = client_for(alice).get(f"/api/audit/?{query}", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 400 and response.json()["error"]["code"] == code


def test_bad_filter_messages_are_in_chinese_by_default(client_for, alice):
    response = client_for(alice).get("/api/audit/?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z")
    assert response.json()["error"]["message"] == "时间范围的开始（since）必须早于结束（until）。"
    assert "审计日志筛选条件无效" in client_for(alice).get("/api/audit/?kb=x").json()["error"]["message"]


def test_anonymous_callers_are_refused(api_client):
    assert api_client.get("/api/audit/").status_code == 401


def test_the_page_shows_an_owner_their_entries(client, alice, log):
    client.force_login(alice)
    response = client.get(f"/audit/?kb={log['alice_kb'].pk}", HTTP_ACCEPT_LANGUAGE="en")
    page = response.content.decode()
    assert response.status_code == 200 and "Document deleted" in page and "Bob KB" not in page
    assert client.get("/audit/?since=not-a-date").status_code == 400


@pytest.fixture
async def closed_connections():
    """The async client's sync-view thread keeps its connection (tests/assistants/test_share.py): closed after."""
    from asgiref.sync import sync_to_async
    from django.db import connections

    yield
    await sync_to_async(connections.close_all)()


async def _csv(async_client, url: str) -> tuple[object, list[list[str]]]:
    response = await async_client.get(url, headers={"accept-language": "en"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response.is_async  # streamed as it is written, not collected first
    text = b"".join([chunk async for chunk in response.streaming_content]).decode("utf-8")
    assert text.startswith("\ufeff")
    return response, list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))


@pytest.mark.django_db(transaction=True)
async def test_csv_export_is_the_filtered_view_and_formula_safe(async_client, make_user, log, closed_connections):
    from asgiref.sync import sync_to_async

    await async_client.aforce_login(await sync_to_async(make_user)("root", superuser=True))
    _response, rows = await _csv(async_client, "/audit/export.csv?actor=alice")
    assert rows[0][:4] == [f"Time ({settings.TIME_ZONE})", "Who", "Action", "Action code"]  # the times' zone named
    body = [r for r in rows[1:] if r[3] == "document.delete"]
    assert len(body) == 1 and all(r[1] == "alice" for r in rows[1:])
    assert body[0][2] == "Document deleted"
    assert body[0][6] == "'=HYPERLINK(\"http://evil\")"  # would run as a formula without the apostrophe
    assert body[0][8] == "Alice KB" and body[0][9] == "192.0.2.1" and "'+cmd.md" not in body[0][11]


@pytest.mark.django_db(transaction=True)
async def test_csv_export_pages_through_the_whole_log(async_client, make_user, log, monkeypatch, closed_connections):
    """Batches of 2 (keyset paging on time and id): every entry once, newest first, entries of one instant too."""
    from asgiref.sync import sync_to_async

    from audit import export

    monkeypatch.setattr(export, "BATCH", 2)
    at = timezone.now()
    await sync_to_async(lambda: [AuditEntry(action=Action.KB_UPDATE, at=at, object_repr=f"same-{i}").save()
                                 for i in range(5)])()
    await async_client.aforce_login(await sync_to_async(make_user)("root", superuser=True))
    _response, rows = await _csv(async_client, "/audit/export.csv?action=kb.update")
    expected = await sync_to_async(lambda: list(AuditEntry.objects.filter(action=Action.KB_UPDATE)
                                                .order_by("-at", "-id").values_list("object_repr", flat=True)))()
    assert [r[6] for r in rows[1:]] == expected and len(expected) == 6


def test_cell_quotes_every_formula_start():
    assert [cell(v) for v in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "plain", None, 3)] == [
        "'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "plain", "", "3"]


def test_the_admin_shows_entries_read_only(client, make_user, log):
    client.force_login(make_user("root", superuser=True))
    page = client.get("/admin/audit/auditentry/", HTTP_ACCEPT_LANGUAGE="en")
    assert page.status_code == 200 and "Bob KB" in page.content.decode()
    assert client.get("/admin/audit/auditentry/add/").status_code == 403
    assert client.post(f"/admin/audit/auditentry/{log['a'].pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEntry.objects.filter(pk=log["a"].pk).exists()
