"""Stage 2 of the web connector: the site's ``robots.txt`` (RFC 9309), read with ``protego``.

``protego`` matches as RFC 9309 says (the longest rule wins, ``*`` and ``$`` in paths, our product token's group
before ``*``) and reads ``Crawl-delay`` and ``Sitemap``; ``urllib.robotparser`` matches in file order, without
wildcards. The answer (§2.3.1): 2xx → the rules; 4xx → everything allowed; 5xx →
``SourceError("web_robots_unavailable")``, so the run stops before anything is fetched; an unreachable site →
``source_unreachable``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from protego import Protego

from sources.kinds.base import SourceError
from sources.kinds.web_errors import text
from sources.kinds.web_fetch import Fetcher, FetchError

MAX_ROBOTS_BYTES = 512 * 1024     # RFC 9309 §2.5: crawlers MAY stop at 500 KiB
MAX_CRAWL_DELAY_S = 30.0          # a robots.txt asking for more is honoured at this rate


@dataclass
class Robots:
    rules: Protego | None
    token: str                              # our product token, e.g. "zhiku-bot"
    sitemaps: list[str] = field(default_factory=list)

    def allowed(self, url: str) -> bool:
        return self.rules is None or bool(self.rules.can_fetch(url, self.token))

    def delay_s(self) -> float:
        if self.rules is None:
            return 0.0
        delay = self.rules.crawl_delay(self.token)
        return min(float(delay), MAX_CRAWL_DELAY_S) if delay else 0.0


def read_robots(fetcher: Fetcher, site: str, token: str, allowed) -> Robots:
    """The rules of ``site`` (scheme://host[:port]) for ``token``."""
    url = site + "/robots.txt"
    try:
        response = fetcher.get(url, max_bytes=MAX_ROBOTS_BYTES, allowed=allowed, accept="text/plain")
    except FetchError as exc:
        if exc.code == "web_too_large":
            return Robots(None, token)     # RFC 9309 §2.5 lets a crawler stop reading; we then allow all
        if exc.code == "web_off_site":     # robots.txt redirected off the site: treat as not there
            return Robots(None, token)
        if exc.code == "source_address_refused":
            raise SourceError(exc.code, exc.message) from None
        if exc.code in ("web_fetch_failed", "web_timeout"):   # the site itself cannot be reached
            raise SourceError("source_unreachable", exc.message) from None
        raise SourceError("web_robots_unavailable", text("web_robots_unavailable", site=site, error=exc.message)) from None
    if response.status >= 500:
        raise SourceError("web_robots_unavailable",
                          text("web_robots_unavailable", site=site, error=f"HTTP {response.status}"))
    if response.status != 200:
        return Robots(None, token)
    rules = Protego.parse(response.body.decode("utf-8", errors="replace"))
    return Robots(rules, token, list(rules.sitemaps))
