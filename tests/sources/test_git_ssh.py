"""The Git connector over SSH: a loopback SSH server (tests/sources/git_ssh_server.py, asyncssh) that authorises
one public key and runs git-upload-pack. The private key is the ``ssh_key`` credential; with ``known_hosts`` the
host is pinned, without it the first key is accepted; a wrong client key or a host key that does not match is
``source_auth_failed``."""
from __future__ import annotations

import pytest

pytest.importorskip("asyncssh")

from sources.kinds.base import (  # noqa: E402 - after the asyncssh importorskip
    Fetched,
    Known,
    Limits,
    ScanResult,
    SourceError,
    Unchanged,
    connector_for,
)
from tests.sources.git_server import GitSource  # noqa: E402 - after the asyncssh importorskip
from tests.sources.git_ssh_server import SSHGitServer, new_key  # noqa: E402 - after the asyncssh importorskip

CLIENT = new_key()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("git-ssh")
    source = GitSource(root / "team" / "docs")
    source.write("README.md", "# 通过 SSH\n\n第一版。\n")
    source.write("guide.md", "# 指南\n")
    source.commit("first")
    with SSHGitServer(root, [CLIENT]) as server:
        yield server, source


@pytest.fixture(autouse=True)
def private(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True


def scan(server, credentials, known_hosts="", known=None):
    connector = connector_for("git")({"url": server.url("team/docs"), "known_hosts": known_hosts}, credentials,
                                     limits=Limits(timeout_s=10))
    try:
        return list(connector.scan(known or {}, ScanResult(), lambda: False))
    finally:
        connector.close()


def private_key(key) -> str:
    return key.export_private_key().decode()


def test_pinned_host_then_incremental(served):
    server, source = served
    server.commands.clear()
    items = scan(server, {"ssh_key": private_key(CLIENT)}, known_hosts=server.known_hosts())
    assert {i.key: i.data.decode() for i in items} == {"README.md": "# 通过 SSH\n\n第一版。\n", "guide.md": "# 指南\n"}
    assert server.commands and all(c == "git-upload-pack '/team/docs'" for c in server.commands)

    source.write("README.md", "# 通过 SSH\n\n第二版。\n")
    source.commit("second")
    known = {i.key: Known(i.revision) for i in items}
    items = scan(server, {"ssh_key": private_key(CLIENT)}, known_hosts=server.known_hosts(), known=known)
    assert [(type(i), i.key) for i in items] == [(Fetched, "README.md"), (Unchanged, "guide.md")]
    assert "第二版" in items[0].data.decode()


def test_first_use_accepts_the_host_key(served):
    server, _ = served
    items = scan(server, {"ssh_key": private_key(CLIENT).replace("\n", "")})     # pasted into a one-line box
    assert {i.key for i in items} == {"README.md", "guide.md"}


def test_a_host_key_that_does_not_match_is_refused(served):
    server, _ = served
    with pytest.raises(SourceError) as caught:
        scan(server, {"ssh_key": private_key(CLIENT)}, known_hosts=server.known_hosts(new_key()))
    assert caught.value.code == "source_auth_failed"


def test_a_key_the_server_does_not_know_is_refused(served):
    server, _ = served
    with pytest.raises(SourceError) as caught:
        scan(server, {"ssh_key": private_key(new_key())}, known_hosts=server.known_hosts())
    assert caught.value.code == "source_auth_failed"
    assert "PRIVATE KEY" not in caught.value.message
