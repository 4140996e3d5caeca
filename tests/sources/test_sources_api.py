"""The sources REST API: roles, write-only credentials, registered 4xx codes, run now, runs, cancel."""
from __future__ import annotations

import pytest

from knowledge.models import Document
from knowledge.services.kbs import membership_set
from sources.models import RunStatus, Source, SourceRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(make_user, kb):
    user = make_user("vera")
    membership_set(kb=kb, role="viewer", user=user)
    return user


@pytest.fixture
def editor(make_user, kb):
    user = make_user("eddie")
    membership_set(kb=kb, role="editor", user=user)
    return user


def create(client, kb, site_name, **extra):
    body = {"kind": "memtest", "name": extra.pop("name", "Docs"), "settings": {"site": site_name}, **extra}
    return client.post(f"/api/kbs/{kb.pk}/sources/", body, format="json")


def code(response) -> str:
    return response.json()["error"]["code"]


def test_an_editor_adds_a_source_whose_credentials_are_encrypted_and_never_returned(kb, editor, site, client_for):
    memory, name = site
    response = create(client_for(editor), kb, name, credentials={"token": "tok-12345"}, schedule="daily")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["settings"] == {"site": name} and body["credential_names"] == ["token"] and body["next_run_at"]
    assert "tok-12345" not in response.content.decode() and "credentials" not in body
    stored = Source.objects.get(pk=body["id"])
    assert stored.credentials and "tok-12345" not in stored.credentials  # a Fernet token at rest
    for path in (f"/api/sources/{stored.pk}/", f"/api/kbs/{kb.pk}/sources/"):
        assert "tok-12345" not in client_for(editor).get(path).content.decode()
    from sources.services.sources import source_credentials

    assert source_credentials(stored) == {"token": "tok-12345"}


def test_a_patch_merges_credentials_and_an_empty_one_removes_it(kb, alice, site, client_for):
    from sources.services.sources import source_credentials

    _, name = site
    client = client_for(alice)
    source_id = create(client, kb, name, credentials={"token": "one"}).json()["id"]
    changed = client.patch(f"/api/sources/{source_id}/", {"paused": True, "name": "Renamed"}, format="json")
    assert changed.status_code == 200 and changed.json()["paused"] and changed.json()["credential_names"] == ["token"]
    assert source_credentials(Source.objects.get(pk=source_id)) == {"token": "one"}
    client.patch(f"/api/sources/{source_id}/", {"credentials": {"token": ""}}, format="json")
    assert Source.objects.get(pk=source_id).credential_names == []


def test_bad_input_gets_registered_codes(kb, alice, site, client_for):
    _, name = site
    client = client_for(alice)
    assert code(client.post(f"/api/kbs/{kb.pk}/sources/", {"kind": "gopher", "name": "x"}, format="json")) == "source_kind_unknown"
    bad = client.post(f"/api/kbs/{kb.pk}/sources/", {"kind": "memtest", "name": "x", "settings": {"site": "no"}}, format="json")
    assert bad.status_code == 400 and code(bad) == "source_settings_invalid" and "no such memory site" in bad.json()["error"]["message"]
    assert code(create(client, kb, name, schedule="cron", cron="every day")) == "source_invalid"
    assert code(create(client, kb, name, credentials={"password": "x"})) == "source_invalid"
    assert code(create(client, kb, name, colour="red")) == "unknown_field"
    assert create(client, kb, name).status_code == 201
    taken = create(client, kb, name)
    assert taken.status_code == 400 and code(taken) == "source_invalid" and "Docs" in taken.json()["error"]["message"]
    source_id = Source.objects.get(kb=kb).pk
    assert code(client.delete(f"/api/sources/{source_id}/?keep_documents=maybe")) == "source_invalid"
    assert code(client.patch(f"/api/sources/{source_id}/", {}, format="json")) == "nothing_to_update"


def test_viewers_see_sources_without_settings_and_cannot_manage_them(kb, alice, viewer, site, client_for):
    _, name = site
    source_id = create(client_for(alice), kb, name).json()["id"]
    client = client_for(viewer)
    listed = client.get(f"/api/kbs/{kb.pk}/sources/").json()["results"]
    assert [s["id"] for s in listed] == [source_id] and listed[0]["settings"] is None
    assert client.get(f"/api/sources/{source_id}/").json()["settings"] is None
    assert client.get(f"/api/sources/{source_id}/runs/").status_code == 200
    for response in (create(client, kb, name, name="mine"), client.post(f"/api/sources/{source_id}/run/"),
                     client.patch(f"/api/sources/{source_id}/", {"paused": True}, format="json"),
                     client.delete(f"/api/sources/{source_id}/")):
        assert response.status_code == 403 and code(response) == "role_required"


def test_outsiders_learn_nothing(kb, alice, bob, site, client_for):
    _, name = site
    source_id = create(client_for(alice), kb, name).json()["id"]
    run = SourceRun.objects.create(source_id=source_id)
    client = client_for(bob)
    assert code(client.get(f"/api/kbs/{kb.pk}/sources/")) == "kb_not_found"
    assert code(client.get(f"/api/sources/{source_id}/")) == "source_not_found"
    assert code(client.post(f"/api/sources/{source_id}/run/")) == "source_not_found"
    assert code(client.get(f"/api/source-runs/{run.pk}/")) == "source_run_not_found"
    assert code(client.post(f"/api/source-runs/{run.pk}/cancel/")) == "source_run_not_found"


def test_run_now_answers_202_and_the_runs_carry_counts_and_errors(kb, alice, site, client_for,
                                                                 django_capture_on_commit_callbacks):
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\nalpha"), "b": ("b.md", "# B\n\nbeta")}
    memory.failing = {"b": "source_unreachable"}
    client = client_for(alice)
    source_id = create(client, kb, name).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(f"/api/sources/{source_id}/run/")
    assert started.status_code == 202 and started.json()["status"] == "queued"
    runs = client.get(f"/api/sources/{source_id}/runs/").json()["results"]
    assert runs[0]["status"] == "succeeded" and (runs[0]["added"], runs[0]["failed"]) == (1, 1)
    assert runs[0]["errors"][0]["key"] == "b" and runs[0]["errors"][0]["code"] == "source_unreachable"
    assert client.get(f"/api/sources/{source_id}/").json()["last_run"]["id"] == runs[0]["id"]


def test_a_second_run_is_refused_while_one_is_queued_and_a_queued_run_cancels_at_once(kb, alice, site, client_for):
    _, name = site
    client = client_for(alice)
    source_id = create(client, kb, name).json()["id"]
    first = client.post(f"/api/sources/{source_id}/run/").json()  # not executed: the test never commits
    second = client.post(f"/api/sources/{source_id}/run/")
    assert second.status_code == 409 and code(second) == "source_run_active"
    cancelled = client.post(f"/api/source-runs/{first['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == RunStatus.CANCELLED
    again = client.post(f"/api/source-runs/{first['id']}/cancel/")
    assert again.status_code == 409 and code(again) == "source_run_finished"
    assert client.post(f"/api/sources/{source_id}/run/").status_code == 202


def test_removing_a_source_removes_its_documents_unless_kept(kb, alice, make_site, make_source, run_source, client_for):
    client = client_for(alice)
    kept_site, kept_name = make_site(items={"k": ("kept.md", "# K\n\nkept text")})
    gone_site, gone_name = make_site(items={"g": ("gone.md", "# G\n\ngone text")})
    kept, gone = make_source(kb, kept_name, alice), make_source(kb, gone_name, alice)
    run_source(kept), run_source(gone)
    assert client.delete(f"/api/sources/{gone.pk}/").status_code == 204
    assert client.delete(f"/api/sources/{kept.pk}/?keep_documents=true").status_code == 204
    assert set(Document.objects.filter(kb=kb).values_list("source_name", flat=True)) == {"kept.md"}
    assert not Source.objects.filter(kb=kb).exists()


def test_the_kinds_list_describes_each_kind_s_form(alice, client_for):
    kinds = {k["kind"]: k for k in client_for(alice).get("/api/source-kinds/").json()}
    assert kinds["memtest"]["secret_fields"] == ["token"]
    assert [f["name"] for f in kinds["memtest"]["fields"]] == ["site", "token"]
