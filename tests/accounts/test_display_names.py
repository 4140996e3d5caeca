"""Issue 38 item 6: people shown by their names where they have them (core/names.py), the username beside it: member
lists, the people picker, the audit log, KB owners, groups and the people pages."""
from __future__ import annotations

import pytest

from core.names import display_name, full_name


def test_a_chinese_name_is_family_name_first_without_a_space() -> None:
    assert full_name("伟", "张") == "张伟"
    assert full_name("Ada", "Lovelace") == "Ada Lovelace"
    assert full_name("", " 李娜 ") == "李娜" and full_name("", "") == ""

    class Person:
        username, first_name, last_name = "zhangwei", "伟", "张"

    assert display_name(Person()) == "张伟" and display_name(None) == ""
    Person.first_name = Person.last_name = ""
    assert display_name(Person()) == "zhangwei"


@pytest.fixture
def zhang(make_user):
    user = make_user("zhangwei")
    user.first_name, user.last_name = "伟", "张"
    user.save()
    return user


@pytest.mark.django_db
def test_the_member_list_and_the_picker_show_the_name(client_for, alice, zhang, kb):
    from knowledge.services.kbs import membership_set

    membership_set(kb=kb, user=zhang, role="viewer")
    members = client_for(alice).get(f"/api/kbs/{kb.pk}/members/").json()
    rows = members["results"] if isinstance(members, dict) else members
    (row,) = [m for m in rows if m["user"] == "zhangwei"]
    assert row["display_name"] == "张伟"
    found = client_for(alice).get("/api/people/search/?q=张伟").json()["users"]
    assert [(u["username"], u["display_name"]) for u in found] == [("zhangwei", "张伟")]


@pytest.mark.django_db
def test_pages_show_the_name_with_the_username_beside_it(client, alice, zhang, make_user, make_kb):
    from django.contrib.auth.models import Group

    from core.audit.actions import Action
    from core.audit.recording import record
    from knowledge.services.kbs import membership_set

    staff = make_user("root", superuser=True)
    theirs = make_kb(zhang, "张伟的知识库")
    membership_set(kb=theirs, user=alice, role="viewer")
    client.force_login(alice)
    assert "所有者：张伟" in client.get("/").content.decode()
    team = Group.objects.create(name="销售部")
    zhang.groups.add(team)
    record(Action.KB_UPDATE, actor=zhang, kb=theirs, object_repr="张伟的知识库")
    client.force_login(staff)
    html = client.get("/audit/").content.decode()
    assert '张伟 <span class="muted">zhangwei</span>' in html
    assert "张伟" in client.get(f"/people/groups/{team.pk}/").content.decode()
    html = client.get(f"/people/{zhang.pk}/").content.decode()
    assert '张伟 <span class="muted">zhangwei</span>' in html
    client.force_login(zhang)
    assert "所有者 张伟" in client.get(f"/kbs/{theirs.pk}/settings/").content.decode()
