"""Invitations end to end over HTTP: made by an owner or staff, accepted once at /invite/<token>/, with the roles;
reuse, expiry and withdrawal refused with 410; the e-mail sent through Django's mail (locmem backend)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone

from accounts.models import Invitation
from accounts.people.invitations import token_digest
from knowledge.models import Membership

pytestmark = pytest.mark.django_db


def invite(c, kb, **extra):
    r = c.post("/api/people/invitations/", {"roles": [{"kb_id": kb.pk, "role": "editor"}], **extra}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def token_of(data) -> str:
    return data["url"].rstrip("/").rsplit("/", 1)[1]


def test_accepting_creates_the_account_with_its_roles_once(client_for, client, alice, kb):
    data = invite(client_for(alice), kb, email="new@example.com")
    token = token_of(data)
    stored = Invitation.objects.get(pk=data["id"])
    assert stored.digest == token_digest(token) and token not in stored.digest  # only the hash is kept
    page = client.get(f"/invite/{token}/")
    assert page.status_code == 200 and b"Alice KB" in page.content
    r = client.post(f"/invite/{token}/", {"username": "newbie", "email": "new@example.com",
                                          "password": "newbie-pass-1", "password2": "newbie-pass-1"})
    assert r.status_code == 302
    newbie = get_user_model().objects.get(username="newbie")
    assert newbie.check_password("newbie-pass-1") and newbie.email == "new@example.com"
    assert Membership.objects.get(kb=kb, user=newbie).role == "editor"
    assert client.get("/").wsgi_request.user == newbie  # signed in
    client.logout()
    again = client.get(f"/invite/{token}/")
    assert again.status_code == 410 and "已经使用".encode() in again.content
    assert client_for(alice).get(f"/api/people/invitations/{data['id']}/").json()["state"] == "accepted"


def test_a_bad_password_or_taken_name_creates_nothing_and_keeps_the_link(client, client_for, alice, bob, kb):
    token = token_of(invite(client_for(alice), kb))
    r = client.post(f"/invite/{token}/", {"username": "newbie", "password": "short", "password2": "short"})
    assert r.status_code == 200 and not get_user_model().objects.filter(username="newbie").exists()
    r = client.post(f"/invite/{token}/", {"username": "bob", "password": "long-pass-12", "password2": "long-pass-12"})
    assert r.status_code == 200 and Invitation.objects.get().accepted_at is None


def test_a_signed_in_person_accepts_as_themselves(client, client_for, alice, bob, kb):
    token = token_of(invite(client_for(alice), kb))
    client.force_login(bob)
    assert client.post(f"/invite/{token}/").status_code == 302
    assert Membership.objects.get(kb=kb, user=bob).role == "editor"


def test_expired_and_revoked_links_are_refused(client, client_for, alice, kb):
    c = client_for(alice)
    expired = invite(c, kb)
    Invitation.objects.filter(pk=expired["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    r = client.get(f"/invite/{token_of(expired)}/")
    assert r.status_code == 410 and "过期".encode() in r.content
    revoked = invite(c, kb)
    assert c.delete(f"/api/people/invitations/{revoked['id']}/").status_code == 204
    r = client.post(f"/invite/{token_of(revoked)}/", {"username": "x1", "password": "long-pass-12", "password2": "long-pass-12"})
    assert r.status_code == 410 and not get_user_model().objects.filter(username="x1").exists()
    assert client.get("/invite/not-a-token/").status_code == 404


def test_only_owners_and_staff_invite_and_only_to_their_kbs(client_for, alice, bob, kb):
    r = client_for(bob).post("/api/people/invitations/", {"roles": [{"kb_id": kb.pk, "role": "viewer"}]}, format="json")
    assert r.status_code == 403 and r.json()["error"]["code"] == "invitation_not_allowed"
    twice = [{"kb_id": kb.pk, "role": "viewer"}, {"kb_id": kb.pk, "role": "editor"}]
    r = client_for(alice).post("/api/people/invitations/", {"roles": twice}, format="json")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_invitation"
    r = client_for(alice).post("/api/people/invitations/", {"roles": twice[:1], "expires_in_days": 31}, format="json")
    assert r.status_code == 400 and "expires_in_days" in r.json()["error"]["fields"]  # ZHIKU_INVITATION_MAX_DAYS
    assert client_for(bob).get("/api/people/invitations/").json()["results"] == []


def test_an_invitation_is_sent_by_email_where_configured(settings, client_for, alice, kb):
    settings.ZHIKU_EMAIL_ENABLED = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    data = invite(client_for(alice), kb, email="new@example.com", send=True)
    assert data["sent"] is True
    (message,) = mail.outbox
    assert message.to == ["new@example.com"] and data["url"] in message.body and "Alice KB" in message.body


def test_deactivated_people_cannot_sign_in_or_use_tokens(client, client_for, staff_client, bob):
    bob_api = client_for(bob)
    assert bob_api.get("/api/kbs/").status_code == 200
    assert staff_client.patch(f"/api/people/users/{bob.pk}/", {"is_active": False}, format="json").status_code == 200
    assert bob_api.get("/api/kbs/").status_code == 401
    r = client.post("/accounts/login/", {"username": "bob", "password": "pw-bob"})
    assert r.status_code == 200 and "_auth_user_id" not in client.session  # the form again, not signed in
    r = client.post("/api/auth/token/", {"username": "bob", "password": "pw-bob"}, content_type="application/json")
    assert r.status_code == 400


@pytest.fixture
def staff_client(make_user, client_for):
    user = make_user("staff")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return client_for(user)


def _owner_invites_as_owner(client_for, alice, bob, kb):
    Membership.objects.create(kb=kb, user=bob, role="owner")
    r = client_for(bob).post("/api/people/invitations/", {"roles": [{"kb_id": kb.pk, "role": "owner"}]}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def test_an_invitation_dies_with_its_makers_right_to_grant_it(client, client_for, alice, bob, kb):
    data = _owner_invites_as_owner(client_for, alice, bob, kb)
    # Alice, the other owner, sees Bob's invitation to her KB and could withdraw it.
    seen = client_for(alice).get("/api/people/invitations/").json()["results"]
    assert data["id"] in [i["id"] for i in seen]
    # Bob is removed: his pending invitations to the KB are withdrawn with him.
    assert client_for(alice).delete(f"/api/kbs/{kb.pk}/members/{Membership.objects.get(user=bob).pk}/").status_code in (204, 200)
    assert Invitation.objects.get(pk=data["id"]).revoked_at is not None
    r = client.post(f"/invite/{token_of(data)}/", {"username": "x2", "password": "long-pass-12", "password2": "long-pass-12"})
    assert r.status_code == 410 and not get_user_model().objects.filter(username="x2").exists()


def test_acceptance_checks_the_makers_right_even_when_nothing_withdrew_the_link(client, client_for, alice, bob, kb):
    data = _owner_invites_as_owner(client_for, alice, bob, kb)
    Membership.objects.filter(user=bob).update(role="viewer")       # a change no signal saw (a bulk update)
    r = client.post(f"/invite/{token_of(data)}/", {"username": "x3", "password": "long-pass-12", "password2": "long-pass-12"})
    assert r.status_code == 410 and "不能再授予".encode() in r.content
    assert not get_user_model().objects.filter(username="x3").exists()
    assert not Membership.objects.filter(kb=kb, role="owner").exclude(user=None).exclude(user=bob).exists()


def test_another_owner_withdraws_an_invitation_to_their_kb(client_for, alice, bob, kb):
    data = _owner_invites_as_owner(client_for, alice, bob, kb)
    assert client_for(alice).delete(f"/api/people/invitations/{data['id']}/").status_code == 204
    assert Invitation.objects.get(pk=data["id"]).revoked_at is not None


def test_the_invitation_names_its_maker_family_name_first(client_for, client, alice, kb):
    alice.last_name, alice.first_name = "张", "伟"
    alice.save(update_fields=["last_name", "first_name"])
    token = token_of(invite(client_for(alice), kb))
    assert "张伟 邀请你加入知库" in client.get(f"/invite/{token}/").content.decode()
