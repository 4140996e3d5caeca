"""The people pages over HTTP: staff only where they manage accounts, managers see their own groups, and a
person's page lists their roles directly, as an owner and through groups."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from accounts.models import GroupManager
from knowledge.services.kbs import membership_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(make_user):
    user = make_user("staff")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


def test_people_pages_are_for_staff(client, alice, bob):
    assert client.get("/people/").status_code == 302  # to the sign-in page
    client.force_login(alice)
    for path in ("/people/", f"/people/{bob.pk}/"):
        assert client.get(path).status_code == 403
    r = client.post(f"/people/{bob.pk}/", {"action": "deactivate"})
    assert r.status_code == 403
    bob.refresh_from_db()
    assert bob.is_active


def test_staff_search_page_and_deactivate(client, staff, make_user):
    for i in range(30):
        make_user(f"user{i:02d}")
    client.force_login(staff)
    first = client.get("/people/").content.decode()
    assert "user00" in first and "user29" not in first and 'id="page-next"' in first
    found = client.get("/people/?q=user2").content.decode()
    assert "user21" in found and "user10" not in found
    target = make_user("target")
    assert client.post(f"/people/{target.pk}/", {"action": "deactivate"}).status_code == 302
    target.refresh_from_db()
    assert not target.is_active
    r = client.post("/people/", {"username": "新人", "password": "", "email": ""})
    assert r.status_code == 302 and "/people/" in r["Location"]


def test_staff_issue_a_reset_link_on_the_person_page(client, staff, bob):
    client.force_login(staff)
    r = client.post(f"/people/{bob.pk}/", {"action": "reset_link"})
    assert r.status_code == 200 and "/accounts/reset/" in r.content.decode()


def test_a_manager_opens_only_their_group_and_cannot_rename_it(client, alice, bob):
    team, other = Group.objects.create(name="售后"), Group.objects.create(name="财务")
    GroupManager.objects.create(group=team, user=alice)
    client.force_login(alice)
    listing = client.get("/people/groups/").content.decode()
    assert "售后" in listing and "财务" not in listing
    assert client.get(f"/people/groups/{other.pk}/").status_code == 404
    assert client.post(f"/people/groups/{team.pk}/", {"action": "add_member", "user_id": bob.pk}).status_code == 302
    assert team.user_set.filter(pk=bob.pk).exists()
    assert client.post(f"/people/groups/{team.pk}/", {"action": "rename", "name": "x"}).status_code == 403
    assert client.post("/people/groups/", {"name": "新组"}).status_code == 403
    client.force_login(bob)
    assert client.get("/people/groups/").status_code == 403


def test_a_person_page_lists_kbs_and_roles_direct_and_through_groups(client, staff, alice, bob, make_kb):
    team = Group.objects.create(name="研发组")
    team.user_set.add(bob)
    make_kb(bob, "自己的库")
    shared, via_group = make_kb(alice, "共享库"), make_kb(alice, "组的库")
    membership_set(kb=shared, role="viewer", user=bob)
    membership_set(kb=via_group, role="editor", group=team)
    client.force_login(staff)
    page = client.get(f"/people/{bob.pk}/").content.decode()
    for text in ("自己的库", "所有者", "共享库", "直接授予", "组的库", "用户组 研发组"):
        assert text in page
    client.force_login(bob)
    own = client.get("/account/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "group 研发组" in own and "directly" in own and 'id="person-manage"' not in own


def test_an_owner_invites_on_the_invitations_page(client, alice, bob, kb):
    client.force_login(alice)
    r = client.post("/people/invitations/", {"email": "", "note": "新同事", "expires_in_days": "3", f"role_{kb.pk}": "viewer"})
    assert r.status_code == 200 and "/invite/" in r.content.decode()
    client.force_login(bob)  # owns no KB, not staff
    assert client.get("/people/invitations/").status_code == 403
