"""The web site connector (kind ``web``): a site's pages and linked documents, kept in sync incrementally.

This module checks the settings (docs/sources/web.md) and walks the site breadth-first through the stages:
web_fetch.py (bounded GET), web_robots.py, web_sitemap.py, web_extract.py (main content), web_crawl.py (URLs, scope,
frontier, names), web_visit.py (one URL → Fetched / Unchanged / Failed / gone). A scan is incomplete (removes
nothing) when cancelled, stopped by ``max_pages`` or its request budget with pages queued, the frontier full, a
sitemap unread, or a page never read before failing; a known page that fails is walked through its stored links.
The pages' items come last: when the walk ends they are read together (web_pages.py: the site's chrome dropped,
its name trimmed from titles, one document per text).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from django.conf import settings as django_settings
from django.utils.translation import gettext_lazy as _

from core.net import netguard
from sources.kinds.base import Failed, Item, Known, Limits, ScanResult, SettingField, SourceError, Unchanged, register
from sources.kinds.web_crawl import Frontier, Names, Scope, canonical, identity
from sources.kinds.web_errors import text
from sources.kinds.web_fetch import Fetcher, FetchError, origin
from sources.kinds.web_pages import Pending, finish
from sources.kinds.web_robots import Robots, read_robots
from sources.kinds.web_sitemap import MAX_SITEMAP_BYTES, parse, read_sitemaps
from sources.kinds.web_visit import Outcome, Visitor

USER_AGENT = "zhiku-bot/1.0 (knowledge-base crawler; docs/sources/web.md)"   # ZHIKU_SOURCES_WEB_USER_AGENT
ROBOTS_TOKEN = "zhiku-bot"
DEFAULTS = {"max_pages": 200, "max_depth": 3, "include": [], "exclude": [], "delay_s": 0.5, "files": True}
MAX_PAGES_CAP = 10_000        # the setting ZHIKU_SOURCES_WEB_MAX_PAGES (config/sources.py) replaces it
MAX_DEPTH_CAP = 10
MAX_PATTERNS = 50
MAX_DELAY_S = 60.0

FIELDS = (
    SettingField("url", _("Start page or sitemap"), "url", required=True,
                 help=_("The site's address, e.g. https://docs.example.com/ — or its sitemap (…/sitemap.xml).")),
    SettingField("max_pages", _("Page limit"), "number", default=DEFAULTS["max_pages"],
                 help=_("Pages and files kept per run.")),
    SettingField("max_depth", _("Link depth"), "number", default=DEFAULTS["max_depth"],
                 help=_("How many links away from the start page to go (0: the start page only).")),
    SettingField("include", _("Only these paths"), "lines", default=[],
                 help=_("One pattern a line, e.g. /docs/* (* matches anything). Empty: the whole site.")),
    SettingField("exclude", _("Never these paths"), "lines", default=[],
                 help=_("One pattern a line, e.g. /blog/* or *.zip.")),
    SettingField("delay_s", _("Seconds between requests"), "number", default=DEFAULTS["delay_s"],
                 help=_("Be polite to the site; its robots.txt Crawl-delay wins when longer.")),
    SettingField("files", _("Linked documents"), "checkbox", default=True,
                 help=_("Also keep linked PDF, Word, Excel, PowerPoint, Markdown and text files.")),
    SettingField("authorization", _("Authorization header (optional)"), "secret",
                 help=_("For an intranet site: e.g. Bearer <token>; sent only to this site.")),
)


def _invalid(field: str, message: str) -> SourceError:
    return SourceError("source_settings_invalid", f"{field}: {message}")


def _integer(raw: Mapping[str, Any], field: str, low: int, high: int) -> int:
    value = raw.get(field, DEFAULTS[field])
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _invalid(field, f"a whole number from {low} to {high}")
    return value


def _patterns(raw: Mapping[str, Any], field: str) -> list[str]:
    value = raw.get(field, [])
    if isinstance(value, str):
        value = [part for line in value.splitlines() for part in line.split(",")]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _invalid(field, "a list of path patterns such as /docs/*")
    patterns = [item.strip() for item in value if item.strip()]
    if len(patterns) > MAX_PATTERNS or any(len(item) > 200 for item in patterns):
        raise _invalid(field, f"at most {MAX_PATTERNS} patterns of at most 200 characters")
    return patterns


def _start_url(raw: Mapping[str, Any]) -> str:
    url = raw.get("url")
    if not isinstance(url, str) or not url.strip() or len(url) > 2000:
        raise _invalid("url", "the address of the site's start page or sitemap (http:// or https://)")
    clean = canonical(url)
    if clean is None or not url.strip().lower().startswith(("http://", "https://")):
        raise _invalid("url", "the address must start with http:// or https:// and name a host")
    netguard.parse(url.strip())          # userinfo, backslashes, a host two parsers read differently: refused
    return clean


def max_pages_cap() -> int:
    return int(getattr(django_settings, "ZHIKU_SOURCES_WEB_MAX_PAGES", MAX_PAGES_CAP))


@register
class WebConnector:
    kind: ClassVar[str] = "web"
    secret_fields: ClassVar[tuple[str, ...]] = ("authorization",)
    fields: ClassVar[tuple[SettingField, ...]] = FIELDS

    @classmethod
    def clean_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(settings, Mapping):
            raise _invalid("settings", "an object")
        unknown = sorted(set(settings) - set(DEFAULTS) - {"url"})
        if unknown:
            raise _invalid(", ".join(unknown), "unknown setting")
        delay = settings.get("delay_s", DEFAULTS["delay_s"])
        if isinstance(delay, str):
            try:
                delay = float(delay)
            except ValueError:
                pass
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= MAX_DELAY_S:
            raise _invalid("delay_s", f"seconds from 0 to {MAX_DELAY_S:g}")
        files = settings.get("files", DEFAULTS["files"])
        if isinstance(files, str) and files.lower() in ("true", "false"):
            files = files.lower() == "true"
        if not isinstance(files, bool):
            raise _invalid("files", "true or false")
        return {"url": _start_url(settings), "max_pages": _integer(settings, "max_pages", 1, max_pages_cap()),
                "max_depth": _integer(settings, "max_depth", 0, MAX_DEPTH_CAP),
                "include": _patterns(settings, "include"), "exclude": _patterns(settings, "exclude"),
                "delay_s": float(delay), "files": files}

    @classmethod
    def check_address(cls, settings: Mapping[str, Any]) -> None:
        """When the source is added or changed: a private start address is refused then (netguard.check_when_added)."""
        netguard.check_when_added(settings["url"])

    def __init__(self, settings: Mapping[str, Any], credentials: Mapping[str, str], *, limits: Limits) -> None:
        self.settings = self.clean_settings(settings)
        self.limits = limits
        self.site = origin(self.settings["url"])
        self.fetcher = Fetcher(user_agent=getattr(django_settings, "ZHIKU_SOURCES_WEB_USER_AGENT", USER_AGENT),
                               timeout_s=limits.timeout_s, authorization=credentials.get("authorization", ""),
                               auth_origins=frozenset({self.site}), interval_s=self.settings["delay_s"])
        self.scope = Scope({self.site}, self.settings["include"], self.settings["exclude"], self.settings["files"])
        self.robots: dict[str, Robots] = {}

    def close(self) -> None:
        self.fetcher.close()

    def robots_for(self, site: str) -> Robots:
        if site not in self.robots:
            self.robots[site] = read_robots(self.fetcher, site, ROBOTS_TOKEN, self.scope.on_site)
            self.fetcher.interval_s = max(self.fetcher.interval_s, self.robots[site].delay_s())
        return self.robots[site]

    def scan(self, known: Mapping[str, Known], result: ScanResult, cancelled: Callable[[], bool]) -> Iterator[Item]:
        start = self.settings["url"]
        netguard.check_url(start)
        if not self.robots_for(self.site).allowed(start):
            raise SourceError("web_robots_refused", text("web_robots_refused", site=self.site, url=start))
        names = Names({key: str(entry.state.get("name", "")) for key, entry in known.items() if entry.state.get("name")})
        max_pages = min(self.settings["max_pages"], self.limits.max_items)
        frontier = Frontier(max(10 * max_pages, 1000))
        lastmods: dict[str, str] = {}
        sitemap = start.lower().endswith((".xml", ".xml.gz"))
        if sitemap:
            self._seed_from_sitemap(start, frontier, lastmods, result, max_pages)
        visitor = Visitor(self.fetcher, self.scope, known, max_bytes=self.limits.max_bytes_per_item,
                          names=names, lastmods=lastmods)
        walk = _Walk(self, visitor, frontier, result, max_pages)
        if not sitemap:
            yield from walk.start(start)
        yield from walk.run(cancelled)
        yield from finish(walk.pending, walk.stored, visitor.page_item)

    def _seed_from_sitemap(self, url: str, frontier: Frontier, lastmods: dict[str, str], result: ScanResult,
                           max_pages: int) -> None:
        try:
            response = self.fetcher.get(url, max_bytes=MAX_SITEMAP_BYTES, allowed=self.scope.on_site)
        except FetchError as exc:
            raise SourceError(exc.code, exc.message) from None
        if response.status != 200:
            raise SourceError("web_http_status", text("web_http_status", url=url, status=response.status))
        kind, entries = parse(response.body)
        if not kind:
            raise SourceError("web_not_a_page", text("web_not_a_page", url=url, type=response.content_type or "?"))
        whole = True
        if kind == "sitemapindex":
            children = [entry.loc for entry in entries if (canonical(entry.loc) or "") and self.scope.on_site(entry.loc)]
            entries, whole = read_sitemaps(self.fetcher, children, self.scope.on_site, limit=frontier.cap)
        for entry in entries:
            loc = canonical(entry.loc)
            if loc and self.scope.admits(loc):
                frontier.push(loc, 0)
                lastmods[loc] = entry.lastmod
        if not whole or frontier.overflowed:
            result.complete = False
            result.note = "some sitemaps could not be read completely; nothing was removed"


class _Walk:
    """The breadth-first walk of one scan: pops the frontier, visits, yields, follows links."""

    def __init__(self, connector: WebConnector, visitor: Visitor, frontier: Frontier, result: ScanResult,
                 max_pages: int):
        self.connector = connector
        self.visitor = visitor
        self.frontier = frontier
        self.result = result
        self.max_pages = max_pages
        self.max_depth = connector.settings["max_depth"]
        self.kept: set[str] = set()
        self.pending: list[Pending] = []               # pages read, their items made when the walk ends
        self.stored: list[Mapping[str, Any]] = []      # the stored states of pages that did not change
        self.visits = 0
        self.blind = 0

    def start(self, url: str) -> Iterator[Item]:
        """The start page: any redirect target is allowed (its site joins the scope); a failure ends the scan."""
        self.frontier.seen.add(identity(url))
        outcome = self.visitor.visit(url, allowed=lambda target: True)
        self.visits += 1
        if isinstance(outcome.item, Failed):
            raise SourceError(outcome.item.code, outcome.item.message)
        if outcome.gone:
            raise SourceError("web_http_status", text("web_http_status", url=url, status="404"))
        final = origin(outcome.key or url)
        self.connector.scope.origins.add(final)
        self.frontier.seen.add(outcome.key)
        yield from self._take(outcome, 0)

    def run(self, cancelled: Callable[[], bool]) -> Iterator[Item]:
        budget = 2 * self.max_pages + 20          # requests, counting pages walked through and not kept
        while self.frontier:
            if cancelled():
                return self._stop("the run was cancelled")
            if len(self.kept) >= self.max_pages:
                return self._stop(f"the page limit ({self.max_pages}) was reached before the whole site was read")
            if self.visits >= budget:
                return self._stop(f"the request budget ({budget}) was spent before the whole site was read")
            url, depth = self.frontier.pop()
            try:
                robots = self.connector.robots_for(origin(url))
            except SourceError:
                self.blind += 1
                continue
            if not robots.allowed(url):
                continue                           # disallowed: not read, so removed if it was kept before
            outcome = self.visitor.visit(url)
            self.visits += 1
            self.frontier.seen.add(outcome.key)
            yield from self._take(outcome, depth)
        if self.frontier.overflowed:
            self._stop(f"more than {self.frontier.cap} links were found; the rest were not followed")
        elif self.blind:
            self._stop(f"{self.blind} page(s) failed before they were ever read; pages behind them may be missing")

    def _take(self, outcome: Outcome, depth: int) -> Iterator[Item]:
        if outcome.blind:
            self.blind += 1
        if depth < self.max_depth:
            for link in outcome.links:
                if self.connector.scope.admits(link):
                    self.frontier.push(link, depth + 1)
        if outcome.key in self.kept:
            return                                 # an alias of a page already read (a redirect, a canonical link)
        if outcome.pending is not None:
            self.kept.add(outcome.key)
            self.pending.append(outcome.pending)
        elif outcome.item is not None:
            self.kept.add(outcome.key)
            if isinstance(outcome.item, Unchanged):
                known = self.visitor.known.get(outcome.key)
                state = outcome.item.state if outcome.item.state is not None else (known.state if known else {})
                self.stored.append(state)
            yield outcome.item

    def _stop(self, note: str) -> None:
        self.result.complete = False
        self.result.note = self.result.note or note
