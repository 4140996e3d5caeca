"""Fixtures of the sources tests: in-memory sites (tests/sources/memory_kind.py) and sources over them, and the live
server of the console browser tests.

Each real kind is tested against its local counterpart in its own ``test_<kind>_*.py``.
"""
from __future__ import annotations

import pytest

from tests.browser import daphne
from tests.sources.memory_kind import SITES, MemorySite, _names


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


@pytest.fixture(scope="module")
def sources_console(tmp_path_factory, django_db_setup):
    """daphne on the test database, allowed to reach private addresses (the counterparts listen on loopback)."""
    with daphne(tmp_path_factory.mktemp("sources-console") / "daphne.log", ZHIKU_SOURCES_ALLOW_PRIVATE="true") as url:
        yield url
