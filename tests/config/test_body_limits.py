"""Issue 45 item 1: a file-sized body only from a signed-in request, on the routes that take files; the rest,
anonymous requests first, get the small limit as the body arrives (config/body_limits.py), on a real daphne."""
from __future__ import annotations

import json
import socket
import time
import uuid
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from config.body_limits import ADMIN_UPLOAD, UPLOADS, credentials
from knowledge.models import Document, Membership, Role
from tests.browser import daphne
from tests.config.test_request_limits import server_rss, settled_rss
from tests.helpers import api_token

pytestmark = pytest.mark.django_db(transaction=True)
MiB = 1024 * 1024


def push(base: str, path: str, *, size: int, chunked: bool, headers: dict[str, str] | None = None,
         content_type: str = "multipart/form-data; boundary=x", body: bytes | None = None,
         stop_at: int | None = None) -> tuple[int | None, dict, bytes, int]:
    """POST ``size`` bytes by hand (or ``body``), declared or chunked, as fast as the server reads them, or only the
    first ``stop_at`` of them before waiting for the answer: (status, body JSON or {}, raw body, bytes the client got
    into the connection before the server stopped it)."""
    parts = urlsplit(base)
    lines = [f"POST {path} HTTP/1.1", f"Host: {parts.hostname}:{parts.port}", f"Content-Type: {content_type}",
             *(f"{k}: {v}" for k, v in (headers or {}).items())]
    total = len(body) if body is not None else size
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
    piece = b"x" * (256 * 1024)
    sent, data = 0, b""
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
        try:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            while sent < min(total, stop_at if stop_at is not None else total):
                chunk = body[sent:sent + len(piece)] if body is not None else piece[: min(len(piece), total - sent)]
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                sent += len(chunk)
            if chunked and sent == total:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        try:
            while chunk := sock.recv(65536):
                data += chunk
                head, sep, rest = data.partition(b"\r\n\r\n")
                length = [int(v) for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")[1:])
                          if k.strip().lower() == b"content-length"]
                if sep and length and len(rest) >= length[0]:
                    break
        except OSError:
            pass
    head, _, raw = data.partition(b"\r\n\r\n")
    if not head:
        return None, {}, b"", sent
    status = int(head.split(b" ", 2)[1])
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = {}
    return status, parsed, raw, sent


@pytest.fixture(scope="module")
def base(tmp_path_factory, django_db_blocker):
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("bodies") / "daphne.log") as url:
        yield url


@pytest.fixture
def editor(make_user, make_kb, alice):
    user = make_user("erin")
    kb = make_kb(alice, "上传")
    Membership.objects.create(kb=kb, user=user, role=Role.EDITOR)
    return user, kb


def session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def test_the_upload_patterns_are_the_urlconfs_routes():
    assert UPLOADS.match(reverse("api:document-list", kwargs={"kb_id": 7}))
    assert UPLOADS.match(reverse("api:document-preview", kwargs={"kb_id": 7}))
    assert not UPLOADS.match(reverse("api:document-detail", kwargs={"kb_id": 7, "document_id": 3}))
    assert ADMIN_UPLOAD.match(reverse("admin:knowledge_document_upload"))
    assert not ADMIN_UPLOAD.match(reverse("admin:login"))


def test_a_credential_is_read_from_the_headers_alone():
    assert credentials([(b"authorization", b"Token abc123")], staff=False) == ("token", "abc123")
    assert credentials([(b"cookie", b"a=1; sessionid=s3ss; b=2")], staff=False) == ("session", "s3ss")
    assert credentials([(b"authorization", b"Token abc123")], staff=True) is None      # the admin: a session only
    assert credentials([(b"authorization", b"Bearer abc"), (b"cookie", b"other=1")], staff=False) is None


@pytest.mark.parametrize(("path", "size", "chunked"), [
    ("/api/kbs/2/documents/", 900 * MiB, False),
    ("/api/kbs/2/documents/", 400 * MiB, True),
    ("/api/kbs/2/documents/preview/", 400 * MiB, False),
    ("/admin/login/", 300 * MiB, False),
    ("/admin/knowledge/document/upload/", 300 * MiB, True),
])
def test_an_anonymous_large_body_is_refused_before_20_mib_is_read(base, path, size, chunked):
    push(base, "/api/kbs/", size=1024, chunked=False, content_type="application/json")     # warm: first imports
    before = settled_rss(base)
    started = time.monotonic()
    status, body, _, sent = push(base, path, size=size, chunked=chunked)
    took = time.monotonic() - started
    grown = server_rss(base) - before
    print(f"\nanonymous {size // MiB} MiB {'chunked' if chunked else 'declared'} to {path}: {status} after "
          f"{sent / MiB:.1f} MiB sent, {took:.2f} s; RSS {before / MiB:.0f} MiB, grew {grown / MiB:.1f} MiB")
    assert status == 413 and body["error"]["code"] == "body_too_large"
    assert sent < 20 * MiB
    assert grown < 50 * MiB


def test_an_invalid_token_or_session_gets_the_small_limit_and_says_what_signing_in_allows(base, editor):
    user, kb = editor
    for headers in ({"Authorization": "Token " + "ab" * 32}, {"Cookie": "sessionid=nosuchsession0123456789abcdef"},
                    {"Authorization": "Token " + "ab" * 32, "Accept-Language": "en"}):
        status, body, _, sent = push(base, f"/api/kbs/{kb.pk}/documents/", size=60 * MiB, chunked=False, headers=headers)
        assert status == 413 and body["error"]["code"] == "body_too_large" and sent < 20 * MiB, (headers, status, body)
    assert "signed in" in body["error"]["message"]                   # the last one asked for English


def test_a_revoked_token_and_an_inactive_users_session_get_the_small_limit(base, editor):
    user, kb = editor
    token, session = api_token(user), session_of(user)
    user.is_active = False
    user.save()
    for headers in ({"Authorization": f"Token {token}"}, {"Cookie": f"sessionid={session}"}):
        status, body, _, _ = push(base, f"/api/kbs/{kb.pk}/documents/", size=30 * MiB, chunked=True, headers=headers)
        assert status == 413 and body["error"]["code"] == "body_too_large", (headers, status, body)


def upload_form(name: str, content: bytes) -> tuple[str, bytes]:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return f"multipart/form-data; boundary={boundary}", body


def big_text() -> bytes:
    """An 11 MiB text file (past the small limit) that ingests at once: two sentences, spaces between them."""
    return "上传上限：编辑者的大文件照常上传。".encode() + b" " * (11 * MiB) + "结尾的一句话。\n".encode()


@pytest.mark.parametrize("chunked", [False, True])
def test_an_editors_real_upload_past_the_small_limit_still_works(base, editor, chunked):
    user, kb = editor
    content_type, body = upload_form(f"big-{int(chunked)}.txt", big_text())
    status, answer, raw, _ = push(base, f"/api/kbs/{kb.pk}/documents/", size=0, body=body, chunked=chunked,
                                  content_type=content_type, headers={"Authorization": f"Token {api_token(user)}"})
    assert status == 202, raw[:500]
    (document,) = answer["documents"]
    assert Document.objects.get(pk=document["id"]).source_name == f"big-{int(chunked)}.txt"


def test_a_staff_session_may_upload_through_the_admin_and_another_session_may_not(base, editor):
    user, kb = editor
    staff = get_user_model().objects.create_superuser(f"staff-{uuid.uuid4().hex[:8]}", password="pw-123456789")
    admin = Client()
    admin.force_login(staff)
    admin.get(reverse("admin:knowledge_document_upload"))
    csrf = admin.cookies["csrftoken"].value
    boundary = uuid.uuid4().hex
    parts = [(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n").encode()
             for k, v in (("csrfmiddlewaretoken", csrf), ("kb", kb.pk))]
    body = b"".join(parts) + (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"admin.txt\"\r\n"
                              f"Content-Type: text/plain\r\n\r\n").encode() + big_text() + f"\r\n--{boundary}--\r\n".encode()
    headers = {"Cookie": f"sessionid={admin.cookies['sessionid'].value}; csrftoken={csrf}",
               "Referer": base + reverse("admin:knowledge_document_upload")}
    status, _, raw, _ = push(base, reverse("admin:knowledge_document_upload"), size=0, body=body, chunked=False,
                             content_type=f"multipart/form-data; boundary={boundary}", headers=headers)
    assert status == 302, raw[:500]                     # uploaded: back to the document list
    assert Document.objects.filter(kb=kb, source_name="admin.txt").exists()
    # A member's (not staff) session gets the small limit on the admin's upload page.
    status, answer, _, sent = push(base, reverse("admin:knowledge_document_upload"), size=30 * MiB, chunked=False,
                                   headers={"Cookie": f"sessionid={session_of(user)}"})
    assert status == 413 and answer["error"]["code"] == "body_too_large" and sent < 20 * MiB
