"""A connector over an in-memory site the test changes between runs (the sources tests' protocol-level double).

``MemoryConnector`` speaks the connector protocol (sources/kinds/base.py) exactly as a real kind does
(revisions, ``Known``, ``Unchanged``, ``Failed``, ``ScanResult.complete``, ``cancelled()``) over items held in
a ``MemorySite``; it stands in for the network so these tests exercise the runner, the models, the
scheduler, the API and the console. A server process the browser tests start imports it through
``ZHIKU_SOURCE_KIND_MODULES`` and reads its sites from JSON files in ``MEMTEST_SITES_DIR``.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sources.kinds.base import Failed, Fetched, SettingField, SourceError, Unchanged, register

SITES: dict[str, MemorySite] = {}
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


def _site(name: str) -> MemorySite | None:
    """The site of that name: this process's, else one written as JSON ({key: [name, text]}) for a server process."""
    if name in SITES:
        return SITES[name]
    folder = os.environ.get("MEMTEST_SITES_DIR")
    path = Path(folder) / f"{name}.json" if folder and name.isalnum() else None
    if path is None or not path.exists():
        return None
    return MemorySite(items={k: tuple(v) for k, v in json.loads(path.read_text()).items()})


def revision(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@register
class MemoryConnector:
    kind = "memtest"
    secret_fields = ("token",)
    fields = (SettingField("site", "Site", required=True), SettingField("token", "Token", type="secret"))

    @classmethod
    def clean_settings(cls, settings):
        if not isinstance(settings.get("site"), str) or _site(settings["site"]) is None:
            raise SourceError("source_settings_invalid", "site: no such memory site")
        return {"site": settings["site"]}

    def __init__(self, settings, credentials, *, limits):
        self.site = _site(settings["site"])
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


