"""The README is a signpost (issue 47): short, naming the two commands, every page and address it points to there;
and the docs' own links lead somewhere (files, and the headings their anchors name)."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.urls import Resolver404, resolve

from tests.test_layers import _floors_in_pyproject

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))

FENCED = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# A path under docs/ named in the text, not inside a URL (https://example.com/docs/… is someone else's).
DOCS_PATH = re.compile(r"(?<![\w./:-])docs/[\w./-]*")


def _prose(path: Path) -> str:
    """The text outside fenced code blocks, where links and headings are."""
    return FENCED.sub("", path.read_text(encoding="utf-8"))


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped (letters of every script kept),
    spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """Every heading's anchor; a repeated one gets -1, -2, … as on GitHub."""
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *$", _prose(path), re.M):
        slug = _slug(heading)
        anchors.add(slug if slug not in counts else f"{slug}-{counts[slug]}")
        counts[slug] = counts.get(slug, 0) + 1
    return anchors


def _local_links(path: Path) -> list[str]:
    return [target for target in LINK.findall(_prose(path)) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def _broken_links(path: Path) -> list[str]:
    broken = []
    for target in _local_links(path):
        file_part, _, anchor = target.partition("#")
        goal = (path.parent / file_part).resolve() if file_part else path
        if not goal.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and goal.suffix == ".md" and anchor not in _anchors(goal):
            broken.append(f"{target} (no heading makes #{anchor})")
    return broken


def test_readme_is_at_most_150_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move the detail into docs/"


def test_readme_names_both_commands_and_they_are_the_ones_that_run():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"^```bash\n(.*?)^```", text, re.M | re.S)
    assert block, "README.md shows its commands in a bash block"
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    assert commands == ["make run", "make test"]
    targets = re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert {"run", "test"} <= set(targets)
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "make test" in ci, ".ci/run runs the README's test command"


def test_every_page_and_local_link_the_readme_names_exists():
    named = DOCS_PATH.findall(_prose(README))
    assert named, "README.md maps docs/"
    missing = [path for path in named if not (ROOT / path.rstrip(".")).exists()]
    assert missing == []
    assert _broken_links(README) == []


def test_the_readme_maps_every_page_of_docs():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in _local_links(README)}
    unmapped = [str(page.relative_to(ROOT)) for page in DOCS if page.resolve() not in linked]
    assert unmapped == [], "add these pages to the README's map of docs/"


def test_the_readme_addresses_are_served():
    """Each address in the README's table is a route of the site (resolved as Django would, nothing requested)."""
    table = re.findall(r"^\| (http://127\.0\.0\.1:8000/\S*) \|", README.read_text(encoding="utf-8"), re.M)
    assert len(table) >= 5
    unresolved = []
    for address in table:
        try:
            resolve(urlsplit(address).path)
        except Resolver404:
            unresolved.append(address)
    assert unresolved == []


def test_the_readme_floors_are_the_layers_contract():
    rows = re.findall(r"^\| (\d) \| (.+?) \|$", README.read_text(encoding="utf-8"), re.M)
    floors = [re.findall(r"`(\w+)/`", apps) for _, apps in rows]
    assert floors == _floors_in_pyproject()


@pytest.mark.parametrize("page", DOCS, ids=lambda page: str(page.relative_to(ROOT)))
def test_docs_links_lead_somewhere(page):
    assert _broken_links(page) == []
    missing = [path for path in DOCS_PATH.findall(_prose(page)) if not (ROOT / path.rstrip(".")).exists()]
    assert missing == []
