"""Fixtures of the sources tests: a connector over an in-memory site the test changes between runs.

``MemoryConnector`` speaks the connector protocol (sources/kinds/base.py) exactly as a real kind does
(revisions, ``Known``, ``Unchanged``, ``Failed``, ``ScanResult.complete``, ``cancelled()``) over items held in
a ``MemorySite``; it stands in for the network so these tests exercise the runner, the models, the
scheduler, the API and the console. Each real kind is tested against its local counterpart in its own
``test_<kind>_*.py``.
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Callable

import pytest

from sources.kinds.base import Failed, Fetched, SettingField, SourceError, Unchanged, register

SITES: dict[str, "MemorySite"] = {}
_names = itertools.count(1)


@dataclass
class MemorySite:
    """What the source holds now: {key: (name, text)}; the test edits it between runs."""

    items: dict[str, tuple[str, str]] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)        # key -> code of a Failed item
    complete: bool = True                                           # False: the scan says it was cut short
    raise_after: int | None = None                                  # SourceError after this many items
    on_item: Callable[[int], None] | None = None                    # called before the n-th item is yielded
    token: str = ""                                                 # the credential a scan requires
    scans: list[dict] = field(default_factory=list)                 # what each scan was given


def revision(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@register
class MemoryConnector:
    kind = "memtest"
    secret_fields = ("token",)
    fields = (SettingField("site", "Site", required=True), SettingField("token", "Token", type="secret"))

    @classmethod
    def clean_settings(cls, settings):
        if not isinstance(settings.get("site"), str) or settings["site"] not in SITES:
            raise SourceError("source_settings_invalid", "site: no such memory site")
        return {"site": settings["site"]}

    def __init__(self, settings, credentials, *, limits):
        self.site = SITES[settings["site"]]
        self.credentials = dict(credentials)
        self.limits = limits

    def scan(self, known, result, cancelled):
        site = self.site
        site.scans.append({"known": dict(known), "credentials": self.credentials})
        if site.token and self.credentials.get("token") != site.token:
            raise SourceError("source_unreachable", "wrong token")
        for n, (key, (name, text)) in enumerate(sorted(site.items.items())):
            if site.on_item is not None:
                site.on_item(n)
            if cancelled():
                result.complete = False
                return
            if site.raise_after is not None and n >= site.raise_after:
                raise SourceError("source_unreachable", "the memory site went away")
            url = f"https://memory.example/{key}"
            if key in site.failing:
                yield Failed(key=key, code=site.failing[key], message=f"cannot read {key}", url=url)
            elif key in known and known[key].revision == revision(text):
                yield Unchanged(key=key)
            else:
                yield Fetched(key=key, revision=revision(text), name=name, data=text.encode(), url=url,
                              title=name.rsplit(".", 1)[0], state={"n": n})
        result.complete = site.complete
        if not site.complete:
            result.note = "cut short"

    def close(self):
        pass


@pytest.fixture
def make_site():
    """A new in-memory site and its name (the source's ``site`` setting); forgotten after the test."""
    made = []

    def make(**values) -> tuple[MemorySite, str]:
        name = f"site{next(_names)}"
        SITES[name] = MemorySite(**values)
        made.append(name)
        return SITES[name], name

    yield make
    for name in made:
        SITES.pop(name, None)


@pytest.fixture
def site(make_site):
    return make_site()


@pytest.fixture
def make_source(db):
    from sources.services.sources import source_create

    def make(kb, site_name: str, user, **values):
        return source_create(kb=kb, user=user, kind="memtest", name=values.pop("name", site_name),
                             settings={"site": site_name}, **values)

    return make


@pytest.fixture
def run_source(django_capture_on_commit_callbacks):
    """Start a run as the console does and run it to the end, with its ingestions (on commit, as in production)."""
    from sources.services.runs import run_request

    def run(source, **values):
        with django_capture_on_commit_callbacks(execute=True):
            queued = run_request(source=source, **values)
        queued.refresh_from_db()
        return queued

    return run
