"""Issue 38 item 6: ``/api/account/preferences/`` keeps the KBs ticked on the chat page, server-side and per person."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_chat_kbs_default_to_your_own_and_keep_only_readable_ones(client_for, alice, bob, make_kb):
    from knowledge.services.kbs import membership_set

    hers = make_kb(alice, "A 爱丽丝的库")
    his = make_kb(bob, "B 鲍勃的库")
    shared = make_kb(alice, "C 共享库")
    membership_set(kb=shared, user=bob, role="viewer")
    c = client_for(bob)
    assert c.get("/api/account/preferences/").json() == {"chat_kb_ids": [his.pk]}  # his own
    r = c.put("/api/account/preferences/", {"chat_kb_ids": [shared.pk, hers.pk, shared.pk]}, format="json")
    assert r.status_code == 200 and r.json() == {"chat_kb_ids": [shared.pk]}  # alice's own KB is not his to read
    assert c.get("/api/account/preferences/").json() == {"chat_kb_ids": [shared.pk]}
    assert client_for(alice).get("/api/account/preferences/").json() == {"chat_kb_ids": [hers.pk, shared.pk]}
    shared.memberships.filter(user=bob).delete()
    assert c.get("/api/account/preferences/").json() == {"chat_kb_ids": []}  # no longer readable: left out


@pytest.mark.parametrize("body", [{"chat_kb_ids": "1"}, {"chat_kb_ids": [0]}, {"chat_kb_ids": list(range(1, 300))},
                                  {"colour": 1}, {"chat_kb_ids": ["x"]}])
def test_bad_input_is_a_400_with_a_code(client_for, alice, body):
    r = client_for(alice).put("/api/account/preferences/", body, format="json")
    assert r.status_code == 400 and r.json()["error"]["code"]


def test_a_person_without_own_kbs_gets_the_first_shared_one(client_for, alice, bob, make_kb):
    from knowledge.services.kbs import membership_set

    for name in ("Z 库", "M 库"):
        membership_set(kb=make_kb(alice, name), user=bob, role="viewer")
    from knowledge.models import KnowledgeBase

    assert client_for(bob).get("/api/account/preferences/").json() == {
        "chat_kb_ids": [KnowledgeBase.objects.get(name="M 库").pk]}


def test_the_admin_shows_preferences_read_only(client, client_for, alice, make_user, make_kb):
    kb = make_kb(alice, "价格")
    assert client_for(alice).put("/api/account/preferences/", {"chat_kb_ids": [kb.pk]}, format="json").status_code == 200
    client.force_login(make_user("root", superuser=True))
    page = client.get("/admin/accounts/preference/")
    assert page.status_code == 200 and "alice" in page.content.decode()
    assert client.get("/admin/accounts/preference/add/").status_code == 403
