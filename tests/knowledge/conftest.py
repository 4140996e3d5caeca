"""Fixtures of the knowledge tests: the access matrix the access rule is checked on."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from knowledge.models import Role
from knowledge.services.kbs import membership_set
from tests.helpers import document_with_chunk


@pytest.fixture
def matrix(make_user, make_kb):
    """Two KBs, documents with every kind of restriction, and users holding each role directly or by group."""
    hr, sales, legal, editors, readers = (Group.objects.create(name=n) for n in ("hr", "sales", "legal", "editors", "readers"))
    alice, bob = make_user("alice"), make_user("bob")
    users = {
        "root": make_user("root", superuser=True),
        "alice": alice,  # owns kb1
        "bob": bob,  # owns kb2
        "ed": make_user("ed"),  # editor of kb1, viewer of kb2
        "ged": make_user("ged", groups=[editors, hr]),  # editor of kb1 through a group
        "vhr": make_user("vhr", groups=[hr]),  # viewer of kb1, in hr
        "gview": make_user("gview", groups=[readers, sales]),  # viewer of both through a group, in sales
        "view": make_user("view"),  # viewer of kb1, in no group
        "twice": make_user("twice", groups=[readers, legal]),  # viewer through a group, editor directly
        "stranger": make_user("stranger", groups=[hr, sales, legal]),  # no role anywhere
    }
    kb1, kb2 = make_kb(alice, "one"), make_kb(bob, "two")
    membership_set(kb=kb1, user=users["ed"], role=Role.EDITOR)
    membership_set(kb=kb2, user=users["ed"], role=Role.VIEWER)
    membership_set(kb=kb1, group=editors, role=Role.EDITOR)
    membership_set(kb=kb1, user=users["vhr"], role=Role.VIEWER)
    membership_set(kb=kb1, group=readers, role=Role.VIEWER)
    membership_set(kb=kb2, group=readers, role=Role.VIEWER)
    membership_set(kb=kb1, user=users["view"], role=Role.VIEWER)
    membership_set(kb=kb2, user=users["twice"], role=Role.EDITOR)
    restrictions = {"open": (), "hr": (hr,), "hr+sales": (hr, sales), "legal": (legal,)}
    documents = [(document_with_chunk(kb, f"{kb.name}-{name}.md", groups), {g.pk for g in groups})
                 for kb in (kb1, kb2) for name, groups in restrictions.items()]
    return users, (kb1, kb2), documents
