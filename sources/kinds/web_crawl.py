"""Stage 5 of the web connector: which URLs the walk visits — canonical URLs, the site's scope, the frontier.

Canonical URL (the item's key): scheme and host lower-cased, no default port, user, password or fragment, dot
segments resolved (RFC 3986 §5.2.4), an empty path made ``/``, escapes normalised, click-tracking parameters
(``utm_*``, ``gclid``…) dropped; ``/a`` and ``/a/`` stay two URLs. Scope: the start URL's scheme, host and port
(and where it redirects); ``exclude`` and ``include`` are ``fnmatch`` globs on the path plus ``?query``, and the
start URL is always read, for its links (docs/sources/web.md).
"""
from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from posixpath import splitext
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from requests.utils import requote_uri

from knowledge.parsers import SUPPORTED_EXTENSIONS
from sources.kinds.web_fetch import origin

TRACKING = ("utm_", "gclid", "fbclid", "msclkid", "yclid", "spm", "_hsenc", "_hsmi", "mc_cid", "mc_eid")
PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".php", ".asp", ".aspx", ".jsp")
# Linked files kept as documents: what the parsers read, less web pages and pictures.
FILE_EXTENSIONS = frozenset(ext for ext, kind in SUPPORTED_EXTENSIONS.items()
                            if kind not in ("html", "png", "jpeg"))
# Links not worth a request: pictures, styles, scripts, media, archives, programs (the response's
# Content-Type is checked too, web_visit.py; this saves the request).
JUNK_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .svg .webp .ico .bmp .tif .tiff .css .js .mjs .map .json .woff .woff2 .ttf .otf .eot "
    ".mp3 .mp4 .m4a .avi .mov .webm .ogg .wav .flac .zip .gz .tgz .tar .rar .7z .bz2 .xz .exe .msi .dmg .apk "
    ".iso .bin .deb .rpm".split())
MAX_NAME = 240
# A directory's default document is the directory: /index.html, /docs/index.htm… are / and /docs/ (one document).
DEFAULT_DOCUMENTS = frozenset(
    "index.html index.htm index.shtml index.xhtml index.php index.asp index.aspx index.jsp "
    "default.htm default.html default.asp default.aspx".split())


def canonical(url: str) -> str | None:
    """The canonical form of an absolute http(s) URL, or None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    if scheme not in ("http", "https") or not host:
        return None
    try:
        host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        netloc += f":{port}"
    path = urlsplit(urljoin(f"{scheme}://{netloc}/", parts.path or "/")).path or "/"
    query = "&".join(pair for pair in parts.query.split("&")
                     if pair and not unquote(pair.split("=", 1)[0]).lower().startswith(TRACKING))
    return urlunsplit((scheme, netloc, requote_uri(path), requote_uri(query), ""))


def identity(url: str) -> str:
    """The URL a page is known by: a canonical URL with its default document (``index.html``…) dropped."""
    parts = urlsplit(url)
    head, _, last = parts.path.rpartition("/")
    if parts.query or last.lower() not in DEFAULT_DOCUMENTS:
        return url
    return urlunsplit((parts.scheme, parts.netloc, head + "/", "", ""))


def file_extension(url: str) -> str:
    """The extension of ``url``'s path when it names a file type the platform parses, else ""."""
    ext = splitext(unquote(urlsplit(url).path))[1].lower()
    return ext if ext in FILE_EXTENSIONS else ""


def _target(url: str) -> str:
    parts = urlsplit(url)
    return unquote(parts.path) + (f"?{parts.query}" if parts.query else "")


@dataclass
class Scope:
    origins: set[str]
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    files: bool = True

    def on_site(self, url: str) -> bool:
        return origin(url) in self.origins

    def included(self, url: str) -> bool:
        return not self.include or any(fnmatchcase(_target(url), pattern) for pattern in self.include)

    def excluded(self, url: str) -> bool:
        return any(fnmatchcase(_target(url), pattern) for pattern in self.exclude)

    def admits(self, url: str) -> bool:
        """Whether a link to ``url`` (canonical) joins the walk."""
        if not self.on_site(url) or self.excluded(url) or not self.included(url):
            return False
        if splitext(urlsplit(url).path)[1].lower() in JUNK_EXTENSIONS:
            return False
        return self.files or not file_extension(url)


class Frontier:
    """Breadth-first queue of (url, depth), each page once (``seen`` holds :func:`identity` values: ``/index.html``
    is not queued after ``/``), at most ``cap`` URLs ever queued."""

    def __init__(self, cap: int):
        self.cap = cap
        self.queue: deque[tuple[str, int]] = deque()
        self.seen: set[str] = set()
        self.overflowed = False

    def push(self, url: str, depth: int) -> None:
        if identity(url) in self.seen:
            return
        if len(self.seen) >= self.cap:
            self.overflowed = True
            return
        self.seen.add(identity(url))
        self.queue.append((url, depth))

    def pop(self) -> tuple[str, int]:
        return self.queue.popleft()

    def __bool__(self) -> bool:
        return bool(self.queue)


class Names:
    """Source names ``host[:port]/path.ext``, unique within the source: a URL keeps the name it was first
    given (``stored``: key → name from the previous scan); a clash gets the URL's hash."""

    def __init__(self, stored: dict[str, str] | None = None):
        self.stored = dict(stored or {})
        self.used: set[str] = set(self.stored.values())

    def __call__(self, url: str, ext: str) -> str:
        previous = self.stored.get(url, "")
        if previous.endswith(ext):
            return previous
        parts = urlsplit(url)
        path = unquote(parts.path) or "/"
        if path.endswith("/"):
            path += "index"
        stem, suffix = splitext(path)
        if suffix.lower() == ext or (ext in (".md", ".html") and suffix.lower() in PAGE_SUFFIXES):
            path = stem
        if parts.query:
            path += "~" + hashlib.sha1(parts.query.encode()).hexdigest()[:8]
        name = (parts.netloc + path)[:MAX_NAME] + ext
        if name in self.used:
            name = (parts.netloc + path)[:MAX_NAME] + "~" + hashlib.sha1(url.encode()).hexdigest()[:8] + ext
        self.used.add(name)
        self.stored[url] = name
        return name
