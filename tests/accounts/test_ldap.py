"""Sign-in against a real OpenLDAP directory (Debian's slapd, started by tests/accounts/slapd.py) through the console's form."""
from __future__ import annotations

import ldap
import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from accounts.models import SsoIdentity
from tests.accounts.slapd import PEOPLE, READER_DN, READER_PASSWORD, SUFFIX, directory_modify, group_dn, person_dn, slapd_running


@pytest.fixture(scope="module")
def directory():
    with slapd_running() as running:
        yield running


@pytest.fixture
def ldap_on(sso_env, directory, db):
    def apply(**extra: str):
        return sso_env(
            ZHIKU_LDAP_SERVER_URI=directory.uri, ZHIKU_LDAP_BIND_DN=READER_DN, ZHIKU_LDAP_BIND_PASSWORD=READER_PASSWORD,
            ZHIKU_LDAP_USER_SEARCH_BASE=f"ou=people,{SUFFIX}", ZHIKU_LDAP_USER_FILTER="(uid=%(user)s)",
            ZHIKU_LDAP_GROUP_SEARCH_BASE=f"ou=groups,{SUFFIX}", ZHIKU_LDAP_GROUP_FILTER="(objectClass=groupOfNames)",
            ZHIKU_LDAP_STAFF_GROUP=group_dn("zhiku-admins"), **extra)

    return apply


def sign_in(username: str, password: str) -> tuple[Client, object]:
    """The console's sign-in form: its page, then the form posted with its CSRF token."""
    client = Client(enforce_csrf_checks=True)
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    response = client.post("/accounts/login/", {"username": username, "password": password, "next": "/",
                                                "csrfmiddlewaretoken": page.context["csrf_token"]})
    return client, response


def group_names(user) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def test_directory_password_signs_in_with_name_email_groups_and_staff(ldap_on):
    ldap_on()
    client, response = sign_in("zhang.san", PEOPLE["zhang.san"][2])
    assert response.status_code == 302 and response["Location"] == "/"
    user = User.objects.get(username="zhang.san")
    assert (user.email, user.first_name, user.last_name) == ("zhang.san@zhiku.test", "三", "张")
    assert group_names(user) == {"kb-editors", "zhiku-admins"}
    assert user.is_staff and not user.is_superuser
    assert not user.has_usable_password()  # the password stays in the directory
    assert client.get("/").wsgi_request.user == user
    assert SsoIdentity.objects.get(user=user).source == "ldap"

    _client, response = sign_in("li.si", PEOPLE["li.si"][2])
    li = User.objects.get(username="li.si")
    assert group_names(li) == {"kb-editors"} and not li.is_staff


def test_wrong_password_and_unknown_user_are_refused(ldap_on):
    ldap_on()
    _client, response = sign_in("zhang.san", "not-the-password")
    assert response.status_code == 200 and response.context["form"].errors
    _client, response = sign_in("nobody.here", "whatever")
    assert response.status_code == 200
    assert not User.objects.filter(username__in=["zhang.san", "nobody.here"]).exists()


def test_a_user_removed_from_a_directory_group_loses_it_at_the_next_sign_in(ldap_on, directory):
    ldap_on()
    sign_in("li.si", PEOPLE["li.si"][2])
    li = User.objects.get(username="li.si")
    console_group = Group.objects.create(name="Made in the console")
    li.groups.add(console_group)
    assert group_names(li) == {"kb-editors", "Made in the console"}
    directory_modify(directory, group_dn("kb-editors"), [(ldap.MOD_DELETE, "member", [person_dn("li.si").encode()])])
    directory_modify(directory, group_dn("finance"), [(ldap.MOD_ADD, "member", [person_dn("li.si").encode()])])
    try:
        _client, response = sign_in("li.si", PEOPLE["li.si"][2])
        assert response.status_code == 302
        # The directory's groups follow it; a group made in zhiku is not the directory's to take away.
        assert group_names(li) == {"finance", "Made in the console"}
    finally:
        directory_modify(directory, group_dn("kb-editors"), [(ldap.MOD_ADD, "member", [person_dn("li.si").encode()])])
        directory_modify(directory, group_dn("finance"), [(ldap.MOD_DELETE, "member", [person_dn("li.si").encode()])])


def test_a_group_map_names_the_zhiku_groups_and_mirrors_nothing_else(ldap_on):
    ldap_on(ZHIKU_LDAP_GROUP_MAP="kb-editors=编辑组, finance=财务")
    sign_in("zhang.san", PEOPLE["zhang.san"][2])
    assert group_names(User.objects.get(username="zhang.san")) == {"编辑组"}


def test_a_local_account_of_the_same_name_is_not_taken_over(ldap_on, make_user):
    local = make_user("li.si")
    ldap_on()
    _client, response = sign_in("li.si", PEOPLE["li.si"][2])
    assert response.status_code == 200 and not SsoIdentity.objects.exists()
    # Its own password still works; linking is the administrator's choice.
    _client, response = sign_in("li.si", "pw-li.si")
    assert response.status_code == 302
    ldap_on(ZHIKU_LDAP_LINK_EXISTING="1")
    _client, response = sign_in("li.si", PEOPLE["li.si"][2])
    assert response.status_code == 302 and SsoIdentity.objects.get().user == local


def test_an_unreachable_directory_refuses_sign_in_without_an_error_page(sso_env, db):
    sso_env(ZHIKU_LDAP_SERVER_URI="ldap://127.0.0.1:1", ZHIKU_LDAP_USER_SEARCH_BASE=f"ou=people,{SUFFIX}",
            ZHIKU_LDAP_TIMEOUT="2")
    _client, response = sign_in("zhang.san", PEOPLE["zhang.san"][2])
    assert response.status_code == 200 and response.context["form"].errors


def test_ldap_is_off_unless_configured_and_clear_text_is_refused_in_production(sso_env):
    module = sso_env()
    assert not module.ZHIKU_LDAP_ENABLED
    assert "accounts.sso.ldap.DirectoryBackend" not in module.SSO_AUTHENTICATION_BACKENDS
    with pytest.raises(ImproperlyConfigured, match="ZHIKU_LDAP_START_TLS"):
        sso_env(ZHIKU_ENV="production", ZHIKU_LDAP_SERVER_URI="ldap://dc.example.com",
                ZHIKU_LDAP_USER_SEARCH_BASE="dc=example,dc=com")
    module = sso_env(ZHIKU_ENV="production", ZHIKU_LDAP_SERVER_URI="ldaps://dc.example.com")
    assert module.ZHIKU_LDAP_ENABLED


def test_a_directory_sign_in_is_audited_with_its_method_and_mirrored_groups(ldap_on):
    """Directory sign-ins go through Django's auth, so the audit log sees them (audit/receivers.py)."""
    from audit.models import AuditEntry
    from core.audit import Action

    ldap_on()
    sign_in("zhang.san", "wrong")
    sign_in("zhang.san", PEOPLE["zhang.san"][2])
    failed = AuditEntry.objects.get(action=Action.SIGN_IN_FAILED)
    assert (failed.actor_id, failed.actor_name) == (None, "zhang.san")
    signed_in = AuditEntry.objects.get(action=Action.SIGN_IN)
    assert signed_in.actor.username == "zhang.san" and signed_in.changes == {"method": "ldap"}
    mirrored = AuditEntry.objects.filter(action=Action.GROUP_MEMBER_ADD, changes__user="zhang.san")
    assert set(mirrored.values_list("object_repr", flat=True)) == {"kb-editors", "zhiku-admins"}
