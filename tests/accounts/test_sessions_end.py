"""Browser sessions end with the person's access: a new password (Django's own check), a deactivation (deleted by
accounts/credentials.py, so re-activating brings none back), whichever backend signed the session in."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client

from accounts.people.users import user_set_password, user_update

OIDC = {"ZHIKU_OIDC_CLIENT_ID": "zhiku", "ZHIKU_OIDC_CLIENT_SECRET": "s", "ZHIKU_OIDC_ISSUER": "https://id.example.com",
        "ZHIKU_OIDC_AUTHORIZATION_ENDPOINT": "https://id.example.com/auth",
        "ZHIKU_OIDC_TOKEN_ENDPOINT": "https://id.example.com/token", "ZHIKU_OIDC_USERINFO_ENDPOINT": "https://id.example.com/me",
        "ZHIKU_OIDC_JWKS_URI": "https://id.example.com/jwks", "ZHIKU_OIDC_REDIRECT_URL": "https://kb.example.com/cb/"}
LDAP = {"ZHIKU_LDAP_SERVER_URI": "ldap://127.0.0.1:9", "ZHIKU_LDAP_USER_SEARCH_BASE": "ou=people,dc=zhiku,dc=test"}


def signed_in(user, backend: str | None = None) -> Client:
    browser = Client()
    browser.force_login(user, backend=backend)
    assert who(browser) == user.username
    return browser


def who(browser: Client) -> str:
    """Who the console's page was for ("" when it sent the browser to the sign-in page)."""
    page = browser.get("/account/tokens/")
    return page.wsgi_request.user.get_username() if page.status_code == 200 else ""


@pytest.fixture
def root(make_user):
    return make_user("root", superuser=True)


@pytest.mark.django_db
def test_a_password_set_by_staff_ends_every_session_of_that_person_only(alice, bob, root):
    phone, laptop, bobs = signed_in(alice), signed_in(alice), signed_in(bob)
    user_set_password(actor=root, user=alice, password="a-new-Passw0rd-for-alice")
    assert who(phone) == who(laptop) == ""
    assert who(bobs) == "bob"


@pytest.mark.django_db
def test_deactivation_deletes_the_sessions_and_reactivation_brings_none_back(alice, bob, root):
    phone, bobs = signed_in(alice), signed_in(bob)
    user_update(actor=root, user=alice, is_active=False)
    assert who(phone) == ""
    assert [s.get_decoded().get("_auth_user_id") for s in Session.objects.all()] == [str(bob.pk)]
    user_update(actor=root, user=alice, is_active=True)
    assert who(phone) == ""  # signed out for good: the old cookie names no session
    assert who(bobs) == "bob" and who(signed_in(alice)) == "alice"


@pytest.mark.django_db
@pytest.mark.parametrize("backend, env", [("accounts.sso.oidc.ProviderBackend", OIDC),
                                          ("accounts.sso.ldap.DirectoryBackend", LDAP)])
def test_a_single_sign_on_session_is_refused_while_its_person_is_inactive(alice, sso_env, backend, env):
    """Deactivated without the signals (a queryset update, a SQL statement): the session stays, and the backend that
    signed it in refuses it at each request, as Django's ModelBackend does (accounts/sso/)."""
    sso_env(**env)
    browser = signed_in(alice, backend)
    get_user_model().objects.filter(pk=alice.pk).update(is_active=False)
    assert who(browser) == ""
    get_user_model().objects.filter(pk=alice.pk).update(is_active=True)
    assert who(browser) == "alice"
