"""The Git connector against a repository the test commits to, over file:// (sources/kinds/git.py).

A first scan reads every document; commits then modify, add, delete and rename files, and a second scan given
what the first kept reads only the changed blobs, leaves the rest Unchanged and no longer mentions the deleted
and renamed-away paths (the runner removes those).
"""
from __future__ import annotations

import pytest

from sources.kinds.base import Failed, Fetched, Known, Limits, ScanResult, SourceError, Unchanged, connector_for
from tests.sources.git_server import GitSource


@pytest.fixture
def private(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True


SMALL_ITEMS = Limits(max_bytes_per_item=4096)


def scan(settings: dict, known=None, *, limits=SMALL_ITEMS, credentials=None, cancel=lambda: False):
    connector = connector_for("git")(settings, credentials or {}, limits=limits)
    result = ScanResult()
    try:
        items = list(connector.scan(known or {}, result, cancel))
    finally:
        connector.close()
        assert connector.repo is None
    return items, result


def by_kind(items):
    out = {"fetched": {}, "unchanged": set(), "failed": {}}
    for item in items:
        if isinstance(item, Fetched):
            out["fetched"][item.key] = item
        elif isinstance(item, Unchanged):
            out["unchanged"].add(item.key)
        elif isinstance(item, Failed):
            out["failed"][item.key] = item
    return out


def known_from(items, previous=None):
    known = dict(previous or {})
    for item in items:
        if isinstance(item, Fetched):
            known[item.key] = Known(item.revision, dict(item.state))
    return known


@pytest.fixture
def repo(tmp_path, private):
    source = GitSource(tmp_path / "docs-repo")
    source.write("README.md", "# 知识库\n\n这是第一版的说明。\n")
    source.write("docs/guide.md", "# 指南\n\n安装步骤。\n")
    source.write("docs/keep.md", "# 不变\n\n这个文件不会改。\n")
    source.write("notes.txt", "plain notes\n")
    source.write("手册/入门.md", "# 入门\n\n中文路径的文件。\n")
    source.write("logo.bin", b"\x00\x01binary")
    source.write("big.md", "大" * 3000)            # 9000 bytes: over the 4096-byte cap
    source.commit("first")
    return source


def test_scan_change_scan_again(repo):
    items, result = scan({"url": repo.url})
    first = by_kind(items)
    commit = repo.git("rev-parse", "HEAD")
    assert set(first["fetched"]) == {"README.md", "docs/guide.md", "docs/keep.md", "notes.txt", "手册/入门.md"}
    assert first["fetched"]["手册/入门.md"].data.decode() == "# 入门\n\n中文路径的文件。\n"
    assert set(first["failed"]) == {"big.md"} and first["failed"]["big.md"].code == "git_file_too_large"
    readme = first["fetched"]["README.md"]
    assert readme.revision == repo.blob("README.md")
    assert readme.data.decode() == "# 知识库\n\n这是第一版的说明。\n"
    assert readme.name == "README.md" and readme.state["commit"] == commit
    assert result.complete and commit in result.note and "main" in result.note

    repo.write("README.md", "# 知识库\n\n这是第二版的说明。\n")
    repo.write("new.md", "# 新文件\n")
    repo.git("rm", "-q", "notes.txt")
    repo.git("mv", "docs/guide.md", "docs/handbook.md")
    second_commit = repo.commit("second")

    items, result = scan({"url": repo.url}, known_from(items))
    second = by_kind(items)
    assert set(second["fetched"]) == {"README.md", "new.md", "docs/handbook.md"}
    assert second["unchanged"] == {"docs/keep.md", "手册/入门.md"}
    assert set(second["failed"]) == {"big.md"}
    mentioned = set(second["fetched"]) | second["unchanged"] | set(second["failed"])
    assert "notes.txt" not in mentioned and "docs/guide.md" not in mentioned     # removed by the runner
    assert "第二版" in second["fetched"]["README.md"].data.decode()
    assert second["fetched"]["README.md"].revision != readme.revision
    # the renamed file kept its content: same blob id, new key
    assert second["fetched"]["docs/handbook.md"].revision == first["fetched"]["docs/guide.md"].revision
    assert result.complete and second_commit in result.note


def test_branch_setting_and_default_branch(tmp_path, private):
    source = GitSource(tmp_path / "r", branch="trunk")
    source.write("a.md", "# 主干\n")
    source.commit("trunk")
    source.git("checkout", "-q", "-b", "release")
    source.write("a.md", "# 发布版\n")
    source.write("release-notes.md", "# 发布说明\n")
    source.commit("release")
    source.git("checkout", "-q", "trunk")

    items, result = scan({"url": source.url})
    assert {i.key: i.data.decode() for i in items} == {"a.md": "# 主干\n"}
    assert "on trunk" in result.note

    items, result = scan({"url": source.url, "branch": "release"})
    assert {i.key: i.data.decode() for i in items} == {"a.md": "# 发布版\n", "release-notes.md": "# 发布说明\n"}
    assert "on release" in result.note

    with pytest.raises(SourceError) as caught:
        scan({"url": source.url, "branch": "nope"})
    assert caught.value.code == "git_branch_not_found"


def test_paths_and_extensions_filter(repo):
    items, _ = scan({"url": repo.url, "paths": ["docs", "*.txt"]})
    assert {i.key for i in items} == {"docs/guide.md", "docs/keep.md", "notes.txt"}
    items, _ = scan({"url": repo.url, "extensions": ["txt", ".bin"]})
    assert {i.key for i in items} == {"notes.txt", "logo.bin"}


def test_item_limit_and_cancel_leave_the_scan_incomplete(repo):
    items, result = scan({"url": repo.url}, limits=Limits(max_items=2, max_bytes_per_item=4096))
    assert len(items) == 2 and not result.complete and "limit of 2" in result.note
    items, result = scan({"url": repo.url}, cancel=lambda: True)
    assert items == [] and not result.complete


def test_empty_repository_has_no_files(tmp_path, private):
    source = GitSource(tmp_path / "empty")
    items, result = scan({"url": source.url})
    assert items == [] and result.complete and "no commit" in result.note


def test_missing_repository(tmp_path, private):
    with pytest.raises(SourceError) as caught:
        scan({"url": (tmp_path / "absent").as_uri()})
    assert caught.value.code == "git_repository_not_found"


@pytest.mark.parametrize("url", [
    "ext::sh -c touch% /tmp/pwned", "--upload-pack=touch /tmp/x", "https://user:secret@github.com/o/r.git",
    "https://tok@github.com/o/r.git", "ftp://example.com/r.git", "file:///srv/repo", "http://example.com/r.git", "",
])
def test_settings_refuse_dangerous_urls(url, settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    with pytest.raises(SourceError) as caught:
        connector_for("git").clean_settings({"url": url})
    assert caught.value.code == "source_settings_invalid"


def test_settings_accept_and_normalise(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    cleaned = connector_for("git").clean_settings(
        {"url": "git@github.com:team/docs.git", "paths": "docs, guides", "extensions": ["MD"]})
    assert cleaned["paths"] == ["docs", "guides"] and cleaned["extensions"] == [".md"] and cleaned["branch"] == ""
    assert ".docx" in connector_for("git").clean_settings({"url": "https://github.com/team/docs"})["extensions"]
    with pytest.raises(SourceError):
        connector_for("git").clean_settings({"url": "https://github.com/team/docs", "branch": "--force"})


def test_private_host_refused_before_connecting(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    with pytest.raises(SourceError) as caught:
        scan({"url": "https://127.0.0.1/team/docs.git"})
    assert caught.value.code == "source_address_refused"
    with pytest.raises(SourceError) as caught:
        scan({"url": "git@localhost:team/docs.git"})
    assert caught.value.code == "source_address_refused"


def test_browse_links():
    from sources.kinds.git_remote import browse_link, parse_remote

    github = parse_remote("git@github.com:team/docs.git", allow_private=False)
    assert browse_link(github, "", "abc", "文档/a b.md") == \
        "https://github.com/team/docs/blob/abc/%E6%96%87%E6%A1%A3/a%20b.md"
    gitlab = parse_remote("https://gitlab.com/group/sub/docs.git", allow_private=False)
    assert browse_link(gitlab, "", "abc", "a.md") == "https://gitlab.com/group/sub/docs/-/blob/abc/a.md"
    own = parse_remote("ssh://git@git.example.com:2222/team/docs.git", allow_private=False)
    assert (own.host, own.port) == ("git.example.com", 2222)
    assert browse_link(own, "", "abc", "a.md") == ""
    assert browse_link(own, "https://git.example.com/team/docs/src/{commit}/{path}", "abc", "a.md") == \
        "https://git.example.com/team/docs/src/abc/a.md"


def test_ssh_key_file_is_private_and_removed(settings):
    """The key file and the ssh options (tests/sources/test_git_ssh.py runs them against an SSH server)."""
    import os
    import shlex
    import stat
    import time

    from sources.kinds.git_cli import Access, GitRepo

    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    for known_hosts, checking in (("", "accept-new"), ("github.com ssh-ed25519 AAAAC3Nza", "yes")):
        repo = GitRepo(Access(url="git@github.com:team/docs.git", protocols=("ssh",), ssh_key=key,
                              known_hosts=known_hosts), stall_s=5, deadline=time.monotonic() + 10)
        command = shlex.split(repo._env["GIT_SSH_COMMAND"])
        key_file = command[command.index("-i") + 1]
        assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
        assert open(key_file).read().startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
        assert f"StrictHostKeyChecking={checking}" in command and "BatchMode=yes" in command
        assert key not in repo._env["GIT_SSH_COMMAND"] and repo._env["GIT_ALLOW_PROTOCOL"] == "ssh"
        repo.close()
        assert not os.path.exists(key_file)


def test_spent_time_budget_stops_before_git_runs(repo, settings):
    settings.ZHIKU_SOURCES_GIT_MAX_SECONDS = 1e-9
    with pytest.raises(SourceError) as caught:
        scan({"url": repo.url})
    assert caught.value.code == "source_unreachable" and "time budget" in caught.value.message


@pytest.mark.parametrize("key_args", [["-t", "ed25519"], ["-t", "rsa", "-b", "2048"], ["-t", "rsa", "-b", "2048", "-m", "PEM"]])
def test_a_key_pasted_into_a_one_line_box_still_reads(tmp_path, key_args):
    """The console's secret boxes are one-line inputs, which drop line breaks: ssh-keygen reads the key back."""
    import os
    import subprocess

    from sources.kinds.git_cli import private_key_text

    path = tmp_path / "id"
    subprocess.run(["ssh-keygen", "-q", *key_args, "-N", "", "-f", str(path)], check=True, timeout=60)
    original = path.read_text()
    public = path.with_suffix(".pub").read_text().split()[1]
    for pasted in (original, original.replace("\n", ""), original.replace("\n", " "), "\r\n".join(original.split("\n"))):
        path.write_text(private_key_text(pasted))
        os.chmod(path, 0o600)
        derived = subprocess.run(["ssh-keygen", "-y", "-f", str(path)], capture_output=True, text=True, timeout=60)
        assert derived.returncode == 0, derived.stderr
        assert derived.stdout.split()[1] == public
