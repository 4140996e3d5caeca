"""Login throttling that cannot be sidestepped: per account and per client address, on the token
endpoint and both login pages (django-axes, attempts in PostgreSQL), X-Forwarded-For trusted only for
the configured number of proxies, and no 500 when the cache (Redis) is down."""
from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client, RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from core.http.security import client_address

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
LIMIT = 5


@pytest.fixture(autouse=True)
def _limits(settings):
    settings.ZHIKU_LOGIN_FAILURE_LIMIT = LIMIT
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.ZHIKU_LOGIN_COOLOFF_MINUTES = 15
    settings.ZHIKU_TRUSTED_PROXIES = 0


def token(client, username, password, **extra):
    return client.post(TOKEN, {"username": username, "password": password}, format="json", **extra)


def expire_lockouts():
    """Move every recorded attempt back past the cool-off, as if 16 minutes had passed."""
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))


def assert_too_many_attempts(response):
    assert response.status_code == 429, response.content
    body = response.json()
    assert body["error"]["code"] == "too_many_attempts"
    assert body["error"]["message"]
    assert int(response["Retry-After"]) > 0


# --- client_address -----------------------------------------------------------

def _request(remote="10.0.0.9", forwarded=None):
    meta = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **meta)


def test_client_address_ignores_forwarded_for_without_trusted_proxies(settings):
    assert client_address(_request("10.0.0.9", "1.2.3.4")) == "10.0.0.9"


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (1, "203.0.113.7", "203.0.113.7"),
        (1, "6.6.6.6, 203.0.113.7", "203.0.113.7"),  # the client's own prefix is ignored
        (2, "6.6.6.6, 203.0.113.7, 10.1.1.1", "203.0.113.7"),
        (1, "2001:db8::1", "2001:db8::1"),
        (2, "203.0.113.7", "10.0.0.9"),  # fewer hops than proxies: not trusted
        (1, "not-an-address", "10.0.0.9"),
        (1, "", "10.0.0.9"),
    ],
)
def test_client_address_takes_the_nth_address_from_the_right(settings, proxies, forwarded, expected):
    settings.ZHIKU_TRUSTED_PROXIES = proxies
    assert client_address(_request("10.0.0.9", forwarded)) == expected


# --- token endpoint -------------------------------------------------------------

def test_rotating_forwarded_for_does_not_reset_the_count(alice):
    client = APIClient()
    for i in range(LIMIT - 1):
        response = token(client, "alice", "guess", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
        assert response.status_code == 400
    assert_too_many_attempts(token(client, "alice", "guess", HTTP_X_FORWARDED_FOR="198.51.100.99"))
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


def test_token_lockout_refuses_the_right_password_until_the_cool_off(alice):
    client = APIClient()
    for _ in range(LIMIT - 1):
        assert token(client, "alice", "guess").status_code == 400
    assert_too_many_attempts(token(client, "alice", "guess"))
    assert_too_many_attempts(token(client, "alice", "pw-alice"))
    expire_lockouts()
    response = token(client, "alice", "pw-alice")
    assert response.status_code == 200 and response.data["token"]


def test_token_lockout_is_per_account_whatever_the_address(alice):
    client = APIClient()
    for i in range(LIMIT):
        token(client, "alice", "guess", REMOTE_ADDR=f"192.0.2.{i}")
    # A new address, the right password: the account itself is locked.
    assert_too_many_attempts(token(client, "alice", "pw-alice", REMOTE_ADDR="192.0.2.200"))


def test_token_lockout_is_per_address_whatever_the_account(alice, make_user):
    client = APIClient()
    for i in range(LIMIT):
        token(client, f"nobody{i}", "guess", REMOTE_ADDR="192.0.2.1")
    assert_too_many_attempts(token(client, "alice", "pw-alice", REMOTE_ADDR="192.0.2.1"))
    # alice from her own address is not affected.
    assert token(client, "alice", "pw-alice", REMOTE_ADDR="192.0.2.2").status_code == 200


def test_token_lockout_leaves_other_accounts_at_other_addresses_alone(alice, bob):
    client = APIClient()
    for _ in range(LIMIT):
        token(client, "alice", "guess", REMOTE_ADDR="192.0.2.1")
    assert_too_many_attempts(token(client, "alice", "pw-alice", REMOTE_ADDR="192.0.2.1"))
    response = token(client, "bob", "pw-bob", REMOTE_ADDR="192.0.2.2")
    assert response.status_code == 200 and response.data["token"]


def test_with_one_trusted_proxy_the_forwarded_client_is_counted(settings, alice, bob):
    settings.ZHIKU_TRUSTED_PROXIES = 1
    client = APIClient()
    proxy = {"REMOTE_ADDR": "10.0.0.1"}
    for i in range(LIMIT):
        # The client prepends a different fake address each time; the proxy appends the real one.
        token(client, f"nobody{i}", "guess", HTTP_X_FORWARDED_FOR=f"6.6.6.{i}, 203.0.113.7", **proxy)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}
    assert_too_many_attempts(token(client, "alice", "pw-alice", HTTP_X_FORWARDED_FOR="203.0.113.7", **proxy))
    # Another client behind the same proxy is not locked out with it.
    assert token(client, "bob", "pw-bob", HTTP_X_FORWARDED_FOR="203.0.113.8", **proxy).status_code == 200


def test_token_rate_throttle_uses_the_client_address(settings, alice):
    settings.AXES_FAILURE_LIMIT = 1000
    settings.ZHIKU_TOKEN_RATE = "3/minute"
    client = APIClient()
    for i in range(3):
        token(client, "alice", "guess", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
    response = token(client, "alice", "pw-alice", HTTP_X_FORWARDED_FOR="198.51.100.50")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "throttled"
    assert token(client, "alice", "pw-alice", REMOTE_ADDR="192.0.2.77").status_code == 200


def test_token_login_and_lockout_work_when_the_cache_is_down(settings, alice, caplog):
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient", "SOCKET_CONNECT_TIMEOUT": 0.5},
        }
    }
    client = APIClient()
    response = token(client, "alice", "pw-alice")
    assert response.status_code == 200 and response.data["token"]
    assert "cache unavailable" in caplog.text  # the rate throttle really met the dead cache
    for _ in range(LIMIT - 1):
        assert token(client, "alice", "guess").status_code == 400
    assert_too_many_attempts(token(client, "alice", "guess"))
    assert_too_many_attempts(token(client, "alice", "pw-alice"))


# --- the login pages ----------------------------------------------------------------

@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_login_page_locks_the_account_until_the_cool_off(path, make_user):
    make_user("root", superuser=True)
    client = Client()
    for _ in range(LIMIT - 1):
        response = client.post(path, {"username": "root", "password": "guess"})
        assert response.status_code == 200  # the form again, with its error
    response = client.post(path, {"username": "root", "password": "guess"})
    assert response.status_code == 429
    assert "登录失败次数过多" in response.content.decode()
    assert int(response["Retry-After"]) > 0
    # The right password is refused during the lockout, and no session is made.
    response = client.post(path, {"username": "root", "password": "pw-root"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    expire_lockouts()
    response = client.post(path, {"username": "root", "password": "pw-root"})
    assert response.status_code == 302
    assert client.session["_auth_user_id"]


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_login_page_ignores_forwarded_for_and_spares_others(path, make_user):
    make_user("root", superuser=True)
    make_user("other", superuser=True)
    attacker = Client(REMOTE_ADDR="192.0.2.1")
    for i in range(LIMIT):
        attacker.post(path, {"username": f"x{i}", "password": "guess"}, HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
    # The address is locked whatever X-Forwarded-For says, for any account.
    response = attacker.post(path, {"username": "root", "password": "pw-root"}, HTTP_X_FORWARDED_FOR="198.51.100.200")
    assert response.status_code == 429
    # Another account from another address signs in.
    other = Client(REMOTE_ADDR="192.0.2.2")
    response = other.post(path, {"username": "other", "password": "pw-other"})
    assert response.status_code == 302


def test_lockouts_are_shared_between_the_login_pages_and_the_api(make_user):
    make_user("root", superuser=True)
    client = Client()
    for _ in range(LIMIT):
        client.post("/accounts/login/", {"username": "root", "password": "guess"})
    assert_too_many_attempts(token(APIClient(), "root", "pw-root", REMOTE_ADDR="192.0.2.9"))
    assert client.post("/admin/login/", {"username": "root", "password": "pw-root"}).status_code == 429
