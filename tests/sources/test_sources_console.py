"""The console's Sources section and source page, rendered for editors and viewers in both languages."""
from __future__ import annotations

import pytest

from knowledge.services.kbs import membership_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\nalpha"), "b": ("b.md", "# B\n\nbeta")}
    memory.failing = {"b": "source_unreachable"}
    source = make_source(kb, name, alice, name="Handbook")
    run_source(source)
    return source


def page(client, user, path: str, language: str) -> str:
    client.force_login(user)
    response = client.get(path, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("language, words", [("zh-hans", ["数据源", "立即运行", "添加数据源"]),
                                             ("en", ["Sources", "Run now", "Add a source"])])
def test_the_kb_page_lists_sources_with_their_last_run_and_the_add_form(kb, alice, synced, client, language, words):
    html = page(client, alice, f"/kbs/{kb.pk}/", language)
    assert all(w in html for w in words), [w for w in words if w not in html]
    assert f'href="/kbs/{kb.pk}/sources/{synced.pk}/"' in html and "Handbook" in html
    assert 'data-kind="memtest"' in html and 'data-setting="site"' in html and 'data-credential="token"' in html
    assert "+1 ~0 =0 −0 ✗1" in html


@pytest.mark.parametrize("language, word", [("zh-hans", "运行记录"), ("en", "Runs")])
def test_the_source_page_shows_runs_and_their_errors(kb, alice, synced, client, language, word):
    html = page(client, alice, f"/kbs/{kb.pk}/sources/{synced.pk}/", language)
    assert word in html and 'id="source-edit-form"' in html and "source_unreachable" in html
    assert 'href="https://memory.example/b"' in html and "cannot read b" in html


def test_viewers_see_sources_and_runs_but_no_actions_or_settings(kb, alice, synced, client, make_user):
    viewer = make_user("vic")
    membership_set(kb=kb, role="viewer", user=viewer)
    html = page(client, viewer, f"/kbs/{kb.pk}/", "en")
    assert "Handbook" in html and 'data-action="run"' not in html and "source-add-form" not in html
    html = page(client, viewer, f"/kbs/{kb.pk}/sources/{synced.pk}/", "en")
    assert "Runs" in html and "source-edit-form" not in html and synced.settings["site"] not in html


def test_outsiders_get_404_for_a_source_page(kb, synced, client, bob, make_kb, alice):
    client.force_login(bob)
    assert client.get(f"/kbs/{kb.pk}/sources/{synced.pk}/").status_code == 404
    other = make_kb(alice, "Other")
    client.force_login(alice)
    assert client.get(f"/kbs/{other.pk}/sources/{synced.pk}/").status_code == 404
