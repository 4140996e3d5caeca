"""What a Git remote URL names: its transport, host, port and repository path (git-clone(1), "GIT URLS").

Two spellings reach a server: a URL (``https://host/owner/repo.git``, ``ssh://git@host:2222/owner/repo.git``)
and the scp-like ``git@host:owner/repo.git``. ``file://`` and plain ``http://`` are for repositories on the
private network only, so they are accepted only when ``ZHIKU_SOURCES_ALLOW_PRIVATE`` is set.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from sources.kinds.base import SourceError

_SCP_LIKE = re.compile(r"^(?:(?P<user>[A-Za-z0-9._~-]+)@)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?!//)(?P<path>[^\s]+)$")
_DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22}


@dataclass(frozen=True)
class Remote:
    scheme: str          # https, http, ssh or file
    host: str
    port: int | None
    path: str            # the repository's path on the host, without a leading "/" or a trailing ".git"

    @property
    def protocols(self) -> tuple[str, ...]:
        """The transports git may use for this remote (``GIT_ALLOW_PROTOCOL``)."""
        return (self.scheme,)


def parse_remote(url: str, *, allow_private: bool) -> Remote:
    """Check ``url`` and say what it names; raise ``source_url_invalid`` for anything git should not be given."""
    url = url.strip()
    if not url or url.startswith("-") or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise SourceError("source_url_invalid", "url: give the repository's https://, ssh:// or git@host:path address")
    if "://" not in url:
        match = _SCP_LIKE.match(url)
        if not match:
            raise SourceError("source_url_invalid", "url: give the repository's https://, ssh:// or git@host:path address")
        return Remote("ssh", match["host"].strip("[]"), 22, _repo_path(match["path"]))
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    allowed = ("https", "ssh") + (("http", "file") if allow_private else ())
    if scheme not in allowed:
        raise SourceError("source_url_invalid", f"url: the address must start with {', '.join(s + '://' for s in allowed)}")
    if scheme == "file":
        return Remote("file", "", None, _repo_path(parts.path))
    if parts.password is not None or (scheme != "ssh" and parts.username is not None):
        raise SourceError("source_url_invalid", "url: put the token in the credentials, not in the address")
    try:
        port = parts.port
    except ValueError:
        raise SourceError("source_url_invalid", "url: the address has an invalid port") from None
    if not parts.hostname:
        raise SourceError("source_url_invalid", "url: the address has no host")
    return Remote(scheme, parts.hostname, port or _DEFAULT_PORTS[scheme], _repo_path(parts.path))


def _repo_path(path: str) -> str:
    path = path.strip("/")
    return path[:-4] if path.endswith(".git") else path


# Hosts whose web pages show a file at a commit, and the shape of that page's path.
_BROWSE = {
    "github.com": "{base}/blob/{commit}/{path}",
    "gitlab.com": "{base}/-/blob/{commit}/{path}",
    "codeberg.org": "{base}/src/commit/{commit}/{path}",
    "gitea.com": "{base}/src/commit/{commit}/{path}",
    "gitee.com": "{base}/blob/{commit}/{path}",
    "bitbucket.org": "{base}/src/{commit}/{path}",
}


def browse_link(remote: Remote, template: str, commit: str, path: str) -> str:
    """Where a reader sees ``path`` at ``commit``: the owner's ``browse_url`` template, else a known host's page."""
    quoted = quote(path)
    if template:
        return template.replace("{commit}", commit).replace("{path}", quoted)
    shape = _BROWSE.get(remote.host.lower())
    if not shape or not remote.path:
        return ""
    return shape.format(base=f"https://{remote.host.lower()}/{remote.path}", commit=commit, path=quoted)
