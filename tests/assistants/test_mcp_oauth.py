"""MCP clients signing in with OAuth 2.1, end to end: the official ``mcp`` SDK's ``OAuthClientProvider`` against the
running platform (daphne, tests/browser.py).

Discovery from the 401 (RFC 9728), registration (RFC 7591), the consent page with PKCE S256, the token, then the
tools; the token bound to its resource (RFC 8707: refused at the other MCP address); revoked on the tokens page and
refused at the next request; refresh tokens rotated; what registration and authorization refuse; CORS.
"""
from __future__ import annotations

import hashlib
import os
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from oauth2_provider.models import AccessToken, Application, RefreshToken

from assistants.services import assistant_create, assistant_key_create, kb_key_create
from knowledge.models import KnowledgeBase
from tests.assistants.mcp_oauth_helpers import REDIRECT_URI, Consenter, read_form, session_cookie, signed_in
from tests.browser import daphne
from tests.helpers import redis_available

REDIS_URL = "redis://127.0.0.1:6379/10"
PREFIX = f"zhiku-mcp-oauth-test-{os.getpid()}"
LIVE = pytest.mark.django_db(transaction=True)
ALLOWED_ORIGIN = "https://app.example.com"
TOOLS = {"list_knowledge_bases", "search_knowledge", "ask_assistant"}
KB_TOOLS = {"describe_knowledge_base", "search_knowledge"}


@pytest.fixture(scope="module")
def live(tmp_path_factory, django_db_setup, django_db_blocker):
    env = {"REDIS_URL": REDIS_URL, "ZHIKU_REDIS_PREFIX": PREFIX} if redis_available(REDIS_URL) else {}
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("mcp-oauth") / "daphne.log",
                                             ZHIKU_MCP_CORS_ORIGINS=f"{ALLOWED_ORIGIN},https://other.example.com",
                                             ZHIKU_MCP_REGISTRATIONS_PER_MINUTE="1000", **env) as url:
        yield url


def raw_post(url: str, headers: dict[str, str] | None = None) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return requests.post(url, json=body, timeout=30,
                         headers={"Accept": "application/json, text/event-stream", **(headers or {})})


def challenge_params(response: requests.Response) -> dict[str, str]:
    header = response.headers["WWW-Authenticate"]
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


async def _tools(session):
    return {t.name for t in (await session.list_tools()).tools}


@LIVE
def test_a_client_signs_in_to_an_assistant_lists_its_tools_and_is_refused_once_revoked(live, alice, docs_kb):
    made = assistant_create(owner=alice, name="售前助手", kb_ids=[docs_kb.pk])
    consenter = Consenter(live, alice, target=f"assistant:{made.pk}")

    async def work(session):
        listed = (await session.call_tool("list_knowledge_bases", {})).structured_content
        return await _tools(session), listed

    (tools, listed), storage = signed_in(live + "/mcp/", consenter, work)
    assert tools == TOOLS
    assert listed["assistant"]["name"] == "售前助手" and [k["id"] for k in listed["knowledge_bases"]] == [docs_kb.pk]
    # The consent page offered Alice's own assistant and her KB; the client registered itself as a public client.
    assert {f"assistant:{made.pk}", f"kb:{docs_kb.pk}"} <= set(consenter.choices)
    assert "测试 MCP 客户端" in consenter.page and "/mcp/" in consenter.page
    app = Application.objects.get(client_id=storage.client_info.client_id)
    assert app.client_type == "public" and app.authorization_grant_type == "authorization-code"
    # The redirect named the issuer (RFC 9207); the token is stored only as its SHA-256, bound to /mcp/ and the target.
    assert parse_qs(urlsplit(consenter.location).query)["iss"] == [live]
    token = storage.tokens.access_token
    row = AccessToken.objects.get(token_checksum=hashlib.sha256(token.encode()).hexdigest())
    assert row.token == "" and row.user == alice and row.resource == [live + "/mcp/"]
    assert row.scope.split() == ["mcp", f"assistant:{made.pk}"] and storage.tokens.scope == row.scope
    assert raw_post(live + "/mcp/", {"Authorization": f"Bearer {token}"}).status_code == 200

    # The sign-in is listed on the tokens page; revoking it there refuses the token at the next request.
    cookie = session_cookie(alice)
    with requests.Session() as console:
        console.cookies.set("sessionid", cookie)
        page = console.get(live + "/account/tokens/", timeout=30)
        assert page.status_code == 200 and "测试 MCP 客户端" in page.text and "售前助手" in page.text
        revoke_path = re.search(r'action="(/account/tokens/mcp/\d+/revoke/)"', page.text)[1]
        csrf = read_form(page.text).hidden["csrfmiddlewaretoken"]
        done = console.post(live + revoke_path, data={"csrfmiddlewaretoken": csrf}, allow_redirects=False, timeout=30)
        assert done.status_code == 302
        assert "测试 MCP 客户端" not in console.get(live + "/account/tokens/", timeout=30).text
    refused = raw_post(live + "/mcp/", {"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "token_invalid"
    assert challenge_params(refused)["error"] == "invalid_token"
    # Its refresh token went with it.
    refresh = requests.post(live + "/oauth/token/", timeout=30, data={
        "grant_type": "refresh_token", "refresh_token": storage.tokens.refresh_token, "client_id": app.client_id})
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"


@LIVE
def test_a_token_for_one_kb_reaches_that_kb_only_and_is_refused_at_the_other_address(live, alice, docs_kb, make_kb,
                                                                                    ingest):
    other = make_kb(alice, "人事制度")
    ingest(other, {"leave.md": "# 休假\n\n员工每年享有 15 天带薪年假。\n"})
    address = f"{live}/mcp/kb/{docs_kb.pk}/"

    async def work(session):
        found = (await session.call_tool("search_knowledge", {"query": "知库专业版一年多少钱？"})).structured_content
        described = (await session.call_tool("describe_knowledge_base", {})).structured_content
        return await _tools(session), found, described

    consenter = Consenter(live, alice)
    (tools, found, described), storage = signed_in(address, consenter, work)
    assert tools == KB_TOOLS and consenter.choices == [f"kb:{docs_kb.pk}"]
    assert "9800" in found["results"][0]["text"] and {r["kb_id"] for r in found["results"]} == {docs_kb.pk}
    assert described["knowledge_base"]["name"] == "产品文档"
    token = storage.tokens.access_token
    assert raw_post(address, {"Authorization": f"Bearer {token}"}).status_code == 200
    # RFC 8707: issued for /mcp/kb/<id>/, refused at /mcp/ and at another KB's address.
    for elsewhere in (live + "/mcp/", f"{live}/mcp/kb/{other.pk}/"):
        refused = raw_post(elsewhere, {"Authorization": f"Bearer {token}"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "token_wrong_resource", elsewhere
        assert challenge_params(refused)["error"] == "invalid_token"

    # A token for /mcp/ bound to a KB works there like a KB key, and is refused at the KB's own address.
    (tools, _, _), general = signed_in(live + "/mcp/", Consenter(live, alice, target=f"kb:{docs_kb.pk}"),
                                       _tools_and_none)
    assert tools == TOOLS
    refused = raw_post(address, {"Authorization": f"Bearer {general.tokens.access_token}"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "token_wrong_resource"


async def _tools_and_none(session):
    return await _tools(session), None, None


@LIVE
def test_the_per_kb_address_takes_that_kbs_key_only(live, alice, docs_kb, make_kb, ingest, assistant):
    other = make_kb(alice, "人事制度")
    ingest(other, {"leave.md": "# 休假\n\n员工每年享有 15 天带薪年假。\n"})
    _, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    _, other_key = kb_key_create(user=alice, kb_id=other.pk)
    _, assistant_key = assistant_key_create(user=alice, assistant=assistant)
    address = f"{live}/mcp/kb/{docs_kb.pk}"  # without the last slash too
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": {"query": "员工每年享有几天带薪年假", "top_k": 5}}}
    answer = requests.post(address, json=body, timeout=60, headers={
        "Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"})
    result = answer.json()["result"]["structuredContent"]
    assert answer.status_code == 200 and all(r["kb_id"] == docs_kb.pk for r in result["results"])
    for wrong in (other_key, assistant_key):
        refused = raw_post(address, {"Authorization": f"Bearer {wrong}"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "token_wrong_resource"
    # The KB key's creator losing the KB: the search is refused in its query, as everywhere.
    KnowledgeBase.objects.filter(pk=docs_kb.pk).update(owner=_someone_else())
    gone = requests.post(address, json=body, timeout=60, headers={
        "Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}).json()["result"]
    assert gone["isError"] and gone["structuredContent"]["error"]["code"] == "kb_not_found"


def _someone_else():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username="carol", password="pw-carol")


@LIVE
def test_an_unauthenticated_request_is_401_naming_the_metadata_which_names_the_server(live):
    for path in ("/mcp/", "/mcp/kb/7/"):
        refused = raw_post(live + path)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "key_missing"
        params = challenge_params(refused)
        assert params["resource_metadata"] == f"{live}/.well-known/oauth-protected-resource{path}"
        assert "error" not in params  # nothing was sent (RFC 6750 §3.1)
        described = requests.get(params["resource_metadata"], timeout=30).json()
        assert described["resource"] == live + path and described["authorization_servers"] == [live]
        assert described["scopes_supported"] == ["mcp"] and described["bearer_methods_supported"] == ["header"]
    assert requests.get(live + "/.well-known/oauth-protected-resource", timeout=30).json()["resource"] == live + "/mcp/"
    assert requests.get(live + "/.well-known/oauth-protected-resource/other/", timeout=30).status_code == 404
    bad = raw_post(live + "/mcp/", {"Authorization": "Bearer not-a-token"})
    assert bad.status_code == 401 and challenge_params(bad)["error"] == "invalid_token"

    server = requests.get(live + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert server["issuer"] == live and server["registration_endpoint"] == live + "/oauth/register/"
    assert server["authorization_endpoint"] == live + "/oauth/authorize/" and server["token_endpoint"] == live + "/oauth/token/"
    assert server["code_challenge_methods_supported"] == ["S256"] and server["response_types_supported"] == ["code"]
    assert server["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert server["token_endpoint_auth_methods_supported"] == ["none"]


def _register(live: str, **metadata) -> requests.Response:
    body = {"client_name": "t", "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none", **metadata}
    return requests.post(live + "/oauth/register/", json=body, timeout=30)


@LIVE
def test_registration_takes_public_clients_with_https_or_loopback_redirects_only(live):
    for uris in ([REDIRECT_URI], ["http://localhost:9/cb"], ["http://[::1]/cb"], ["https://client.example.com/cb"]):
        made = _register(live, redirect_uris=uris)
        assert made.status_code == 201 and made.json()["token_endpoint_auth_method"] == "none", uris
        assert "client_secret" not in made.json()
    assert _register(live, token_endpoint_auth_method=None).status_code == 400
    defaulted = requests.post(live + "/oauth/register/", json={"redirect_uris": [REDIRECT_URI]}, timeout=30)
    assert defaulted.status_code == 201 and defaulted.json()["token_endpoint_auth_method"] == "none"
    for metadata in ({"token_endpoint_auth_method": "client_secret_basic"}, {"grant_types": ["implicit"]},
                     {"grant_types": ["password"]}, {"response_types": ["token"]}, {"redirect_uris": []},
                     {"redirect_uris": ["http://client.example.com/cb"]}, {"redirect_uris": ["https://x.example/cb#f"]},
                     {"redirect_uris": ["javascript:alert(1)"]}):
        refused = _register(live, **metadata)
        assert refused.status_code == 400, metadata
        assert refused.json()["error"] in ("invalid_client_metadata", "invalid_redirect_uri"), metadata
    assert requests.post(live + "/oauth/register/", data=b"{no", timeout=30).status_code == 400
    # RFC 7592: the client may read and delete its registration, not change it past these rules.
    made = _register(live).json()
    auth = {"Authorization": f"Bearer {made['registration_access_token']}"}
    assert requests.get(made["registration_client_uri"], headers=auth, timeout=30).json()["client_id"] == made["client_id"]
    changed = requests.put(made["registration_client_uri"], headers=auth, timeout=30, json={
        "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "client_secret_basic"})
    assert changed.status_code == 405
    assert requests.delete(made["registration_client_uri"], headers=auth, timeout=30).status_code == 204
    assert not Application.objects.filter(client_id=made["client_id"]).exists()


def _authorize_url(live: str, client_id: str, **params) -> str:
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "s1",
             "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256",
             "resource": live + "/mcp/", "scope": "mcp", **params}
    return live + "/oauth/authorize/?" + urlencode({k: v for k, v in query.items() if v is not None})


@LIVE
def test_the_authorization_refuses_plain_pkce_no_pkce_implicit_and_foreign_resources(live, alice, bob, docs_kb,
                                                                                    make_kb):
    client_id = _register(live).json()["client_id"]
    with requests.Session() as console:
        console.cookies.set("sessionid", session_cookie(alice))
        for params in ({"code_challenge_method": "plain"}, {"code_challenge": None, "code_challenge_method": None},
                       {"response_type": "token"}):
            answer = console.get(_authorize_url(live, client_id, **params), allow_redirects=False, timeout=30)
            location = answer.headers.get("Location", "")
            assert answer.status_code in (302, 400), params
            assert answer.status_code == 400 or "error=" in location and "code=" not in location, params
        foreign = console.get(_authorize_url(live, client_id, resource="https://evil.example/mcp/"), timeout=30)
        assert foreign.status_code == 400 and "evil.example" in foreign.text
        # A target the person may not use is refused when the form comes back.
        bobs = assistant_create(owner=bob, name="Bob 的助手", kb_ids=[make_kb(bob, "Bob 库").pk])
        page = console.get(_authorize_url(live, client_id), timeout=30)
        form = read_form(page.text)
        assert f"assistant:{bobs.pk}" not in form.choices and f"kb:{docs_kb.pk}" in form.choices
        refused = console.post(page.url, data={**form.hidden, "target": f"assistant:{bobs.pk}", "allow": "1"},
                               allow_redirects=False, timeout=30)
        assert refused.status_code == 400 and not refused.headers.get("Location")
        # Denying sends the client access_denied.
        denied = console.post(page.url, data={**form.hidden, "target": f"kb:{docs_kb.pk}"}, allow_redirects=False,
                              timeout=30)
        assert denied.status_code == 302 and "error=access_denied" in denied.headers["Location"]
    # Signed out: the sign-in page first, then back here.
    anonymous = requests.get(_authorize_url(live, client_id), allow_redirects=False, timeout=30)
    assert anonymous.status_code == 302 and anonymous.headers["Location"].startswith("/accounts/login/")


@LIVE
def test_refresh_tokens_rotate_and_a_reused_one_revokes_the_family(live, alice, docs_kb):
    (_, _, _), storage = signed_in(live + "/mcp/", Consenter(live, alice, target=f"kb:{docs_kb.pk}"), _tools_and_none)
    client_id, first = storage.client_info.client_id, storage.tokens
    data = {"grant_type": "refresh_token", "client_id": client_id, "resource": live + "/mcp/"}
    renewed = requests.post(live + "/oauth/token/", data={**data, "refresh_token": first.refresh_token}, timeout=30)
    assert renewed.status_code == 200
    second = renewed.json()
    assert second["refresh_token"] != first.refresh_token and second["access_token"] != first.access_token
    assert second["scope"].split() == ["mcp", f"kb:{docs_kb.pk}"]  # the target carried over
    assert raw_post(live + "/mcp/", {"Authorization": f"Bearer {second['access_token']}"}).status_code == 200
    assert raw_post(live + "/mcp/", {"Authorization": f"Bearer {first.access_token}"}).status_code == 401
    reused = requests.post(live + "/oauth/token/", data={**data, "refresh_token": first.refresh_token}, timeout=30)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    # Reuse revoked the whole family: the live second token goes too (RFC 9700 §4.14.2).
    assert raw_post(live + "/mcp/", {"Authorization": f"Bearer {second['access_token']}"}).status_code == 401
    assert not RefreshToken.objects.filter(user=alice, revoked__isnull=True).exists()


@LIVE
def test_cors_answers_listed_origins_only(live, alice, docs_kb):
    for path in ("/mcp/", "/mcp/kb/1/", "/oauth/token/", "/oauth/register/", "/.well-known/oauth-authorization-server",
                 "/.well-known/oauth-protected-resource/mcp/"):
        listed = requests.options(live + path, timeout=30, headers={
            "Origin": ALLOWED_ORIGIN, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version"})
        assert listed.status_code == 204, path
        assert listed.headers["Access-Control-Allow-Origin"] == ALLOWED_ORIGIN, path
        assert "authorization" in listed.headers["Access-Control-Allow-Headers"].lower(), path
        assert "POST" in listed.headers["Access-Control-Allow-Methods"] or "GET" in listed.headers["Access-Control-Allow-Methods"]
        unlisted = requests.options(live + path, timeout=30, headers={
            "Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"})
        assert not [h for h in unlisted.headers if h.lower().startswith("access-control-")], (path, unlisted.headers)
    # A listed origin can read the 401's challenge and the session header; the toolkit's "*" never goes out.
    refused = raw_post(live + "/mcp/", {"Origin": ALLOWED_ORIGIN})
    assert refused.headers["Access-Control-Allow-Origin"] == ALLOWED_ORIGIN
    assert {"www-authenticate", "mcp-session-id"} <= {h.strip().lower() for h in
                                                    refused.headers["Access-Control-Expose-Headers"].split(",")}
    _, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    ok = raw_post(live + "/mcp/", {"Origin": ALLOWED_ORIGIN, "Authorization": f"Bearer {key}"})
    assert ok.status_code == 200 and ok.headers["Access-Control-Allow-Origin"] == ALLOWED_ORIGIN
    for origin in ("https://evil.example.com", "https://app.example.com.evil.com", "http://app.example.com", None):
        headers = {"Origin": origin} if origin else {}
        metadata = requests.get(live + "/.well-known/oauth-authorization-server", headers=headers, timeout=30)
        assert "Access-Control-Allow-Origin" not in metadata.headers, origin
        assert "Access-Control-Allow-Origin" not in raw_post(live + "/mcp/", headers).headers, origin
    token = requests.post(live + "/oauth/token/", data={"grant_type": "refresh_token", "refresh_token": "x"},
                          headers={"Origin": ALLOWED_ORIGIN}, timeout=30)
    assert token.status_code in (400, 401) and token.headers["Access-Control-Allow-Origin"] == ALLOWED_ORIGIN


def test_the_resource_helpers():
    from assistants.mcp_auth.resources import canonical, challenge, mcp_target, our_resource

    assert mcp_target("/mcp") == (True, None) and mcp_target("/mcp/kb/12/") == (True, 12)
    assert mcp_target("/mcp/kb/0/") is None and mcp_target("/mcp/other/") is None and mcp_target("/mcpx") is None
    assert canonical("HTTP://Host:8/mcp") == canonical("http://host:8/mcp/") == "http://host:8/mcp/"
    assert our_resource("http://h/mcp/kb/3/", "http://h") == 3 and our_resource("http://h/mcp/", "http://h") is None
    assert our_resource("http://other/mcp/", "http://h") is False and our_resource("http://h/mcp/?x=1", "http://h") is False
    assert challenge("http://h", None, error="invalid_token", description='a "b"') == (
        b'Bearer resource_metadata="http://h/.well-known/oauth-protected-resource/mcp/", scope="mcp", '
        b'error="invalid_token", error_description="a \\"b\\""')



@pytest.mark.django_db
def test_open_registration_is_bounded_per_client_address(client, settings, monkeypatch):
    from types import SimpleNamespace

    from assistants.ratelimit import reset_local

    settings.ZHIKU_MCP_REGISTRATIONS_PER_MINUTE = 3
    reset_local()
    monkeypatch.setattr("assistants.mcp_auth.views.time", SimpleNamespace(time=lambda: 1_800_000_010.0))  # one minute
    body = {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    answers = [client.post("/oauth/register/", body, content_type="application/json") for _ in range(5)]
    assert [a.status_code for a in answers] == [201, 201, 201, 429, 429]
    assert answers[3].json()["error"] == "temporarily_unavailable" and answers[3]["Retry-After"] == "50"
    assert Application.objects.count() == 3
    # Another address has its own count.
    other = client.post("/oauth/register/", body, content_type="application/json", REMOTE_ADDR="192.0.2.7")
    assert other.status_code == 201
    reset_local()
