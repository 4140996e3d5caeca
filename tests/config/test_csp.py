"""A Content-Security-Policy on every page: strict (no inline script or style, nothing from another host),
the nonce new on each response and only where a page uses it. The pages' working under it: tests/config/test_csp_browser.py."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"no Content-Security-Policy on {response.wsgi_request.path}"
    return {name: values for name, *values in (part.split() for part in header.split(";") if part.strip())}


@pytest.fixture
def signed_in(client, make_user, make_kb):
    root = make_user("root", superuser=True)
    client.force_login(root)
    return client, make_kb(root, "库")


def test_every_page_has_the_strict_policy(signed_in):
    client, kb = signed_in
    pages = ["/", f"/kbs/{kb.pk}/", f"/kbs/{kb.pk}/settings/", f"/kbs/{kb.pk}/evaluation/", f"/kbs/{kb.pk}/hit-test/",
             "/chat/", "/admin/", "/admin/knowledge/knowledgebase/", "/api/kbs/", "/api/docs/", "/api/redoc/"]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        directives = policy(response)
        assert directives["default-src"] == ["'self'"], path
        assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"], path
        assert directives["base-uri"] == ["'self'"] and directives["form-action"] == ["'self'"], path
        assert directives["img-src"] == ["'self'", "data:"], path
        # The site's own websocket address, for browsers whose 'self' does not cover ws:.
        assert directives["connect-src"] == ["'self'", "ws://testserver"], path
        for name in ("script-src", "style-src") if path != "/api/redoc/" else ("script-src",):
            values = directives[name]
            assert values[0] == "'self'" and "'unsafe-inline'" not in values and "'unsafe-eval'" not in values, path
            assert all(re.fullmatch(r"'nonce-[A-Za-z0-9+/=]{20,}'", v) for v in values[1:]), (path, values)
    # The Redoc page alone allows inline styles and blob: workers (its bundle needs them; config/urls.py).
    redoc = policy(client.get("/api/redoc/"))
    assert redoc["style-src"] == ["'self'", "'unsafe-inline'"] and redoc["worker-src"] == ["'self'", "blob:"]
    assert "worker-src" not in policy(client.get("/api/docs/"))
    # Signed out, the sign-in page too.
    client.logout()
    assert policy(client.get("/accounts/login/"))["script-src"] == ["'self'"]


def test_no_page_has_inline_script_or_style_without_the_nonce(signed_in):
    client, kb = signed_in
    for path in ["/", f"/kbs/{kb.pk}/", "/chat/", "/accounts/login/", "/api/docs/", "/api/redoc/"]:
        response = client.get(path)
        html = response.content.decode()
        nonces = {v.removeprefix("'nonce-").removesuffix("'") for v in policy(response)["script-src"][1:]}
        assert not re.search(r"\sstyle=|\son[a-z]+=", html), path
        for tag, attrs in re.findall(r"<(script|style)\b([^>]*)>", html):
            if (tag == "script" and "src=" in attrs) or (tag == "style" and path == "/api/redoc/"):
                continue
            assert re.search(r'nonce="([^"]+)"', attrs) and re.search(r'nonce="([^"]+)"', attrs)[1] in nonces, (path, tag, attrs)


def test_the_nonce_is_new_on_every_response_and_absent_where_unused(signed_in):
    client, _ = signed_in
    first, second = (policy(client.get("/api/redoc/"))["script-src"][1] for _ in range(2))
    assert first != second
    assert policy(client.get("/chat/"))["script-src"] == ["'self'"]


def test_over_https_the_websocket_address_is_wss(signed_in, settings):
    client, _ = signed_in
    assert policy(client.get("/chat/", secure=True))["connect-src"] == ["'self'", "wss://testserver"]
