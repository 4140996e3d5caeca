"""The official ``mcp`` SDK's OAuth client (``OAuthClientProvider``) signing in to the running platform.

The SDK discovers everything from the 401 (Protected Resource Metadata, then the authorization server's metadata),
registers itself, and sends the person to the authorization URL with PKCE S256; ``redirect_handler`` plays that
person: an httpx client holding a console session (``force_login``) opens the consent page, picks a target and
allows, and the code comes back from the redirect's ``Location`` through ``callback_handler``.
"""
from __future__ import annotations

import asyncio
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from django.test import Client
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://127.0.0.1:33418/callback"


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class FormReader(HTMLParser):
    """The consent form's fields: hidden inputs, the CSRF token and the radio choices."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden: dict[str, str] = {}
        self.choices: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("type") == "hidden" and a.get("name"):
            self.hidden[a["name"]] = a.get("value") or ""
        if tag == "input" and a.get("type") == "radio" and a.get("name") == "target":
            self.choices.append(a.get("value") or "")


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def read_form(html: str) -> FormReader:
    reader = FormReader()
    reader.feed(html)
    return reader


class Consenter:
    """The person at the browser: opens the authorization URL signed in, chooses ``target`` and allows (or not)."""

    def __init__(self, base: str, user, *, target: str | None = None, allow: bool = True) -> None:
        self.base, self.user, self.target, self.allow = base, user, target, allow
        self.location = ""
        self.page = ""
        self.choices: list[str] = []

    async def redirect_handler(self, authorization_url: str) -> None:
        cookie = await asyncio.to_thread(session_cookie, self.user)
        async with httpx2.AsyncClient(cookies={"sessionid": cookie}, timeout=60) as console:
            page = await console.get(authorization_url)
            assert page.status_code == 200, page.text[:500]
            self.page = page.text
            form = read_form(page.text)
            self.choices = form.choices
            data = dict(form.hidden)
            if self.target is not None or form.choices:
                data["target"] = self.target if self.target is not None else form.choices[0]
            if self.allow:
                data["allow"] = "1"
            answer = await console.post(authorization_url, data=data)
            assert answer.status_code == 302, (answer.status_code, answer.text[:500])
            self.location = urljoin(authorization_url, answer.headers["location"])

    async def callback_handler(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(self.location).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0])


def provider(url: str, consenter: Consenter, storage: MemoryStorage | None = None) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(client_name="测试 MCP 客户端", redirect_uris=[REDIRECT_URI],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="none")
    return OAuthClientProvider(server_url=url, client_metadata=metadata, storage=storage or MemoryStorage(),
                               redirect_handler=consenter.redirect_handler, callback_handler=consenter.callback_handler)


async def _signed_in(url: str, auth: OAuthClientProvider, work):
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(60.0)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                return await work(session)


def signed_in(url: str, consenter: Consenter, work, storage: MemoryStorage | None = None):
    """``await work(session)`` in an SDK session that signed in with OAuth at MCP address ``url``; its result."""
    storage = storage or MemoryStorage()
    return asyncio.run(_signed_in(url, provider(url, consenter, storage), work)), storage
