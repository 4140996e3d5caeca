"""Kind "git": the documents of a Git repository's branch, updated by commit (docs/sources/git.md).

Each scan clones the tip of the branch (blob-less and shallow, sources/kinds/git_cli.py), lists its files
with their blob ids, and reads only the blobs whose id differs from what the previous run kept: a file's
revision is its Git blob id, so a commit that leaves a file alone leaves its document alone, and a file
that was renamed without a change keeps no document under its old path. The commit scanned is kept in the
run's note and in each item's state.
"""
from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from django.conf import settings as django_settings
from django.utils.translation import gettext_lazy as _

import sources.kinds.git_errors  # noqa: F401 - registers the codes this kind raises
from core.net import netguard
from sources.kinds import field_checks as fields
from sources.kinds.base import Failed, Fetched, Item, Known, Limits, ScanResult, SettingField, SourceError, Unchanged, register
from sources.kinds.git_cli import Access, Entry, GitRepo, OutOfTime
from sources.kinds.git_remote import Remote, browse_link, parse_remote

DEFAULT_MAX_SECONDS = 600.0     # a whole scan, clone included; ZHIKU_SOURCES_GIT_MAX_SECONDS overrides it


def _known_hosts(settings: Mapping[str, Any]) -> str:
    value = settings.get("known_hosts") or ""
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        value = "\n".join(value)
    return fields.text({"known_hosts": value}, "known_hosts", limit=20000)


def wanted(path: str, patterns: list[str]) -> bool:
    """Whether ``path`` is under one of the owner's path prefixes or matches one of their globs (``*`` crosses
    ``/``, fnmatch rules); an empty list takes every path."""
    if not patterns:
        return True
    for pattern in patterns:
        if any(ch in pattern for ch in "*?["):
            if fnmatch.fnmatchcase(path, pattern.lstrip("/")):
                return True
        else:
            prefix = pattern.strip("/")
            if not prefix or path == prefix or path.startswith(prefix + "/"):
                return True
    return False


@register
class GitConnector:
    kind: ClassVar[str] = "git"
    secret_fields: ClassVar[tuple[str, ...]] = ("token", "ssh_key")
    fields: ClassVar[tuple[SettingField, ...]] = (
        SettingField("url", _("Repository URL"), type="url", required=True,
                     help=_("https://host/owner/repo.git, ssh://git@host/owner/repo.git or git@host:owner/repo.git")),
        SettingField("branch", _("Branch"), help=_("Empty: the repository's default branch.")),
        SettingField("paths", _("Paths"), type="lines",
                     help=_("One folder (docs) or pattern (*.md) a line; empty: the whole repository.")),
        SettingField("extensions", _("File extensions"), type="lines",
                     help=_("One a line (md, txt); empty: every type the knowledge base reads.")),
        SettingField("token", _("Access token (HTTPS)"), type="secret"),
        SettingField("ssh_key", _("Private key (SSH)"), type="secret"),
        SettingField("known_hosts", _("SSH host keys"), type="lines",
                     help=_("The host's known_hosts lines; empty: the first key the host shows is trusted.")),
        SettingField("browse_url", _("Browse URL"),
                     help=_("For a self-hosted server: the address of a file's page, with {commit} and {path}.")),
    )

    @classmethod
    def clean_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        url = fields.text(settings, "url")
        try:
            parse_remote(url, allow_private=fields.private_allowed())
        except SourceError as exc:
            raise fields.invalid(exc.message) from None
        branch = fields.text(settings, "branch", limit=250)
        if branch.startswith("-") or any(ch.isspace() or ch in "~^:?*[\\" for ch in branch) or ".." in branch:
            raise fields.invalid("branch: a branch name such as main")
        return {"url": url, "branch": branch, "paths": fields.string_list(settings, "paths"),
                "extensions": fields.extensions(settings),
                "username": fields.text(settings, "username", "x-access-token", 200) or "x-access-token",
                "known_hosts": _known_hosts(settings),
                "browse_url": fields.browse_base(settings, needs="{path}")}

    @classmethod
    def check_address(cls, settings: Mapping[str, Any]) -> None:
        """When the source is added or changed: a private host is refused then (netguard.check_when_added)."""
        remote = parse_remote(settings["url"], allow_private=fields.private_allowed())
        if remote.scheme != "file":
            host = f"[{remote.host}]" if ":" in remote.host else remote.host
            netguard.check_when_added(f"https://{host}:{remote.port or 443}/")

    def __init__(self, settings: Mapping[str, Any], credentials: Mapping[str, str], *, limits: Limits) -> None:
        self.settings = self.clean_settings(settings)
        self.credentials = credentials
        self.limits = limits
        self.remote: Remote = parse_remote(self.settings["url"], allow_private=fields.private_allowed())
        self.repo: GitRepo | None = None

    def _open(self) -> GitRepo:
        if self.remote.scheme != "file":
            netguard.check_host(self.remote.host, self.remote.port)
        token = (self.credentials.get("token") or "").strip() if self.remote.scheme in ("https", "http") else ""
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in token):     # it becomes an HTTP header line
            raise SourceError("source_auth_failed", "the token holds control characters")
        access = Access(url=self.settings["url"], protocols=self.remote.protocols, token=token,
                        username=self.settings["username"],
                        ssh_key=self.credentials.get("ssh_key", "") if self.remote.scheme == "ssh" else "",
                        known_hosts=self.settings["known_hosts"])
        total = float(getattr(django_settings, "ZHIKU_SOURCES_GIT_MAX_SECONDS", None)
                      or os.environ.get("ZHIKU_SOURCES_GIT_MAX_SECONDS") or DEFAULT_MAX_SECONDS)
        self.repo = GitRepo(access, stall_s=self.limits.timeout_s, deadline=time.monotonic() + total)
        return self.repo

    def _entries(self, repo: GitRepo) -> list[Entry]:
        extensions = tuple(self.settings["extensions"])
        return sorted((e for e in repo.tree()
                       if e.path.lower().endswith(extensions) and wanted(e.path, self.settings["paths"])),
                      key=lambda e: e.path)

    def scan(self, known: Mapping[str, Known], result: ScanResult, cancelled: Callable[[], bool]) -> Iterator[Item]:
        self.close()             # a scan starts from a fresh clone
        repo = self._open()
        commit, branch = repo.clone(self.settings["branch"])
        entries = self._entries(repo) if commit else []
        result.note = f"commit {commit} on {branch or 'HEAD'}" if commit else f"{branch or 'HEAD'} has no commit yet"
        if len(entries) > self.limits.max_items:
            entries = entries[: self.limits.max_items]
            result.complete = False
            result.note += f"; stopped at the limit of {self.limits.max_items} files"
        changed = [e for e in entries if e.path not in known or known[e.path].revision != e.oid]
        repo.fetch_blobs([e.oid for e in changed])
        sizes = repo.sizes([e.oid for e in changed])
        for entry in entries:
            if cancelled():
                result.complete = False
                result.note += "; cancelled"
                return
            if entry.path in known and known[entry.path].revision == entry.oid:
                yield Unchanged(entry.path)
                continue
            try:
                item = self._read(repo, entry, commit, sizes.get(entry.oid))
            except OutOfTime:
                result.complete = False
                result.note += "; stopped: out of time"
                return
            except SourceError as exc:
                item = Failed(entry.path, exc.code, exc.message, url=self._url(commit, entry.path))
            yield item

    def _url(self, commit: str, path: str) -> str:
        return browse_link(self.remote, self.settings["browse_url"], commit, path)

    def _read(self, repo: GitRepo, entry: Entry, commit: str, size: int | None) -> Item:
        url = self._url(commit, entry.path)
        cap = self.limits.max_bytes_per_item
        if size is None:
            return Failed(entry.path, "git_failed", f"{entry.path}: the server did not send its blob", url=url)
        if size > cap:
            return Failed(entry.path, "git_file_too_large", f"{entry.path} is {size} bytes; the limit is {cap}", url=url)
        data = repo.read(entry.oid)
        if len(data) > cap:
            return Failed(entry.path, "git_file_too_large", f"{entry.path} is {len(data)} bytes; the limit is {cap}",
                          url=url)
        return Fetched(key=entry.path, revision=entry.oid, name=entry.path, data=data, url=url,
                       state={"commit": commit, "path": entry.path})

    def close(self) -> None:
        if self.repo is not None:
            self.repo.close()
            self.repo = None
