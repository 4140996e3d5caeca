"""MCP clients' OAuth credentials end with the person's access, and redirect URIs are plain URIs.

Against the running platform (daphne, tests/browser.py) with the official ``mcp`` SDK's OAuth client
(tests/assistants/mcp_oauth_helpers.py): after a password is set, the account deactivated or removed, the access
token is refused at ``/mcp/``, the refresh token and an authorization code not yet exchanged are ``invalid_grant``,
and re-activating the account brings none back (accounts/credentials.py, assistants/mcp_auth/oauth.py). Registration
refuses a redirect URI with whitespace, a backslash or a control character, and the consent page refuses one a client
registered before that rule (assistants/mcp_auth/redirects.py).
"""
from __future__ import annotations

import base64
import hashlib
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from accounts.people.users import user_set_password, user_update
from knowledge.models import Membership, Role
from tests.assistants.mcp_oauth_helpers import REDIRECT_URI, Consenter, read_form, session_cookie, signed_in
from tests.browser import daphne
from tests.helpers import redis_available

REDIS_URL = "redis://127.0.0.1:6379/10"
PREFIX = f"zhiku-mcp-oauth-revocation-test-{os.getpid()}"
LIVE = pytest.mark.django_db(transaction=True)
VERIFIER = "zhiku-test-verifier-of-forty-three-characters-or-more"
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()  # RFC 7636 §4.2


@pytest.fixture(scope="module")
def live(tmp_path_factory, django_db_setup, django_db_blocker):
    env = {"REDIS_URL": REDIS_URL, "ZHIKU_REDIS_PREFIX": PREFIX} if redis_available(REDIS_URL) else {}
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("mcp-oauth-revocation") / "daphne.log",
                                             ZHIKU_MCP_REGISTRATIONS_PER_MINUTE="1000", **env) as url:
        yield url


@pytest.fixture
def root(make_user):
    return make_user("root", superuser=True)


def mcp_status(live: str, token: str) -> tuple[int, str]:
    answer = requests.post(live + "/mcp/", timeout=30, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})
    return answer.status_code, answer.json().get("error", {}).get("code", "") if answer.status_code != 200 else ""


def refresh(live: str, client_id: str, refresh_token: str) -> requests.Response:
    return requests.post(live + "/oauth/token/", timeout=30, data={
        "grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id})


def authorize_url(live: str, client_id: str, redirect_uri: str | None = REDIRECT_URI) -> str:
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "s1",
             "code_challenge": CHALLENGE, "code_challenge_method": "S256", "resource": live + "/mcp/", "scope": "mcp"}
    return live + "/oauth/authorize/?" + urlencode({k: v for k, v in query.items() if v is not None})


def pending_code(live: str, user, client_id: str, target: str) -> str:
    """An authorization code ``user`` allowed for ``client_id`` and nobody exchanged yet (the consent page, by hand)."""
    with requests.Session() as console:
        console.cookies.set("sessionid", session_cookie(user))
        page = console.get(authorize_url(live, client_id), timeout=30)
        assert page.status_code == 200, page.text[:300]
        answer = console.post(page.url, data={**read_form(page.text).hidden, "target": target, "allow": "1"},
                              allow_redirects=False, timeout=30)
        assert answer.status_code == 302, answer.text[:300]
        return parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]


def exchange(live: str, client_id: str, code: str) -> requests.Response:
    return requests.post(live + "/oauth/token/", timeout=30, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "client_id": client_id,
        "code_verifier": VERIFIER, "resource": live + "/mcp/"})


async def _nothing(session):
    return None


def sign_in(live: str, user, target: str):
    """The SDK signed in as ``user`` to ``target`` (tokens in hand), and a second code of the same client pending."""
    _, storage = signed_in(live + "/mcp/", Consenter(live, user, target=target), _nothing)
    client_id = storage.client_info.client_id
    assert mcp_status(live, storage.tokens.access_token) == (200, "")
    return client_id, storage.tokens, pending_code(live, user, client_id, target)


def assert_all_refused(live: str, client_id: str, tokens, code: str) -> None:
    assert mcp_status(live, tokens.access_token) == (401, "token_invalid")
    renewed = refresh(live, client_id, tokens.refresh_token)
    assert renewed.status_code == 400 and renewed.json()["error"] == "invalid_grant", renewed.text
    exchanged = exchange(live, client_id, code)
    assert exchanged.status_code == 400 and exchanged.json()["error"] == "invalid_grant", exchanged.text


def held_by(user) -> tuple[int, int, int]:
    return (AccessToken.objects.filter(user=user).count(), RefreshToken.objects.filter(user=user).count(),
            Grant.objects.filter(user=user).count())


# --- credentials end with the person's access ----------------------------------------------------------------------

@LIVE
def test_a_password_set_ends_the_access_token_the_refresh_token_and_a_pending_code(live, alice, bob, docs_kb, root,
                                                                                  make_kb):
    client_id, tokens, code = sign_in(live, alice, f"kb:{docs_kb.pk}")
    bobs_kb = make_kb(bob, "Bob 的库")
    bobs_id, bobs_tokens, bobs_code = sign_in(live, bob, f"kb:{bobs_kb.pk}")

    user_set_password(actor=root, user=alice, password="a-new-Passw0rd-for-alice")

    assert_all_refused(live, client_id, tokens, code)
    assert held_by(alice) == (0, 0, 0)
    # Another person's sign-in is untouched: the token, its refresh, the code pending.
    assert mcp_status(live, bobs_tokens.access_token) == (200, "")
    assert refresh(live, bobs_id, bobs_tokens.refresh_token).status_code == 200
    assert exchange(live, bobs_id, bobs_code).status_code == 200


@LIVE
def test_deactivation_ends_them_and_reactivation_brings_none_back(live, alice, docs_kb, root):
    client_id, tokens, code = sign_in(live, alice, f"kb:{docs_kb.pk}")

    user_update(actor=root, user=alice, is_active=False)
    assert_all_refused(live, client_id, tokens, code)
    assert held_by(alice) == (0, 0, 0)

    user_update(actor=root, user=alice, is_active=True)
    assert_all_refused(live, client_id, tokens, code)
    # Signing in again works: the person is back, the old tokens are not.
    _, fresh, _ = sign_in(live, alice, f"kb:{docs_kb.pk}")
    assert fresh.access_token != tokens.access_token
    assert mcp_status(live, tokens.access_token) == (401, "token_invalid")


@LIVE
def test_the_refresh_grant_refuses_an_inactive_person_whose_tokens_remain(live, alice, docs_kb):
    """Deactivated without the signals (a queryset update, a SQL statement): the refresh grant checks it itself."""
    client_id, tokens, code = sign_in(live, alice, f"kb:{docs_kb.pk}")
    get_user_model().objects.filter(pk=alice.pk).update(is_active=False)
    assert held_by(alice)[1] > 0  # nothing was revoked
    assert_all_refused(live, client_id, tokens, code)
    assert AccessToken.objects.filter(user=alice).count() == 1  # and nothing new was issued


@LIVE
def test_removing_the_account_leaves_no_token_or_code(live, bob, docs_kb):
    Membership.objects.create(kb=docs_kb, user=bob, role=Role.VIEWER)
    client_id, tokens, code = sign_in(live, bob, f"kb:{docs_kb.pk}")
    bob.delete()  # a KB's owner cannot be removed (KnowledgeBase.owner is PROTECT); a member can
    assert_all_refused(live, client_id, tokens, code)
    # Only the client's own registration token (RFC 7592, no person's) is left.
    assert (AccessToken.objects.filter(user__isnull=False).count(), RefreshToken.objects.count(),
            Grant.objects.count()) == (0, 0, 0)


def lock_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = "
                       "current_database()")
        return cursor.fetchone()[0]


@LIVE
def test_a_refresh_under_way_while_the_password_is_set_waits_for_it_and_mints_nothing(live, alice, docs_kb, root):
    """The refresh token is checked while the password change has not committed: the token endpoint waits on the
    person's row lock (accounts/credentials.py's holder_lock), then finds its refresh token gone: invalid_grant, not
    a 500 and not a live pair issued after the revocation."""
    client_id, tokens, _ = sign_in(live, alice, f"kb:{docs_kb.pk}")
    with ThreadPoolExecutor(1) as pool:
        with transaction.atomic():
            user_set_password(actor=root, user=alice, password="a-new-Passw0rd-for-alice")
            under_way = pool.submit(refresh, live, client_id, tokens.refresh_token)
            deadline = time.monotonic() + 20
            while not lock_waiters() and not under_way.done() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not under_way.done(), under_way.result().text  # it waits for the change to commit
        answer = under_way.result(timeout=30)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant", answer.text
    assert held_by(alice) == (0, 0, 0)


# --- redirect URIs: plain URIs only -------------------------------------------------------------------------------

BAD_URIS = ["https://client.example/cb javascript:alert(1)", "https://client.example\\@evil.example/cb",
            "https://client.example/cb\tx", "https://client.example/cb\x00", "https://client.example/\u202ebc",
            "https://client.example/cb\u2028", "http://127.0.0.1:33418/cb\r\nSet-Cookie:x=1", "https://[zz]/cb"]


@LIVE
def test_registration_refuses_redirect_uris_with_whitespace_backslashes_or_control_characters(live):
    for uri in BAD_URIS:
        for uris in ([uri], [REDIRECT_URI, uri]):
            refused = requests.post(live + "/oauth/register/", timeout=30, json={
                "client_name": "t", "redirect_uris": uris, "token_endpoint_auth_method": "none"})
            assert refused.status_code == 400, uri
            assert refused.json()["error"] == "invalid_redirect_uri", uri
            assert refused.json()["error_description"], uri
    assert not Application.objects.exists()
    made = requests.post(live + "/oauth/register/", timeout=30, json={"redirect_uris": [REDIRECT_URI]})
    assert made.status_code == 201


def consent_section(page) -> str:
    """The page's own part (the header's language switch carries the page's address, the query included)."""
    text = page.content.decode()
    return text[text.index('id="mcp-consent"'):text.index("</section>")]


@pytest.mark.django_db
@pytest.mark.parametrize("stored, asked", [
    ("https://client.example/cb javascript:alert(1) https://x.example/a", "javascript:alert(1)"),
    ("https://client.example\\@evil.example/cb https://client.example/cb", "https://client.example\\@evil.example/cb"),
    ("https://client.example\\@evil.example/cb https://client.example/cb", None),  # the first one, by default
])
def test_the_consent_page_refuses_a_redirect_uri_registered_before_the_rule(client, alice, docs_kb, caplog, stored,
                                                                          asked):
    app = Application.objects.create(name="old client", client_type="public", redirect_uris=stored,
                                     authorization_grant_type="authorization-code")
    client.force_login(alice)
    query = {"response_type": "code", "client_id": app.client_id, "state": "s", "code_challenge": CHALLENGE,
             "code_challenge_method": "S256", "scope": "mcp", **({"redirect_uri": asked} if asked else {})}
    with caplog.at_level(logging.WARNING):
        page = client.get("/oauth/authorize/?" + urlencode(query))
        assert page.status_code == 400 and "Location" not in page
        text = consent_section(page)
        assert "consent-error" in text and 'id="consent-form"' not in text and "client.example" not in text
        # The form, as the page would have sent it: allowed or denied, refused the same way, sent nowhere.
        form = {"client_id": app.client_id, "redirect_uri": asked or stored.split()[0], "response_type": "code",
                "state": "s", "code_challenge": CHALLENGE, "code_challenge_method": "S256", "scope": "mcp",
                "target": f"kb:{docs_kb.pk}"}
        for decision in ({"allow": "1"}, {}):
            answer = client.post("/oauth/authorize/", {**form, **decision})
            assert answer.status_code == 400 and "Location" not in answer, decision
            assert "consent-error" in consent_section(answer) and "client.example" not in consent_section(answer)
    # Django logs each 400 as a warning ("Bad Request"); no error, no traceback.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.records
    assert not Grant.objects.exists()


@pytest.mark.django_db
def test_the_same_client_may_still_use_its_plain_redirect_uri(client, alice, docs_kb):
    app = Application.objects.create(name="old client", client_type="public", authorization_grant_type="authorization-code",
                                     redirect_uris="https://client.example/cb javascript:alert(1)")
    client.force_login(alice)
    page = client.get("/oauth/authorize/?" + urlencode({
        "response_type": "code", "client_id": app.client_id, "redirect_uri": "https://client.example/cb", "state": "s",
        "code_challenge": CHALLENGE, "code_challenge_method": "S256", "scope": "mcp"}))
    assert page.status_code == 200 and "https://client.example/cb" in page.content.decode()
    allowed = client.post(page.wsgi_request.get_full_path(), {**read_form(page.content.decode()).hidden,
                                                              "target": f"kb:{docs_kb.pk}", "allow": "1"})
    assert allowed.status_code == 302 and allowed["Location"].startswith("https://client.example/cb?code=")
