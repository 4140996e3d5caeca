"""The code's shape: the layer contracts in pyproject.toml (``[tool.importlinter]``) hold, and no first-party
module imports itself through others (function-level imports count: a cycle hidden in a function is still one)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import grimp

from tests.helpers import first_party_packages

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = first_party_packages()


def test_layer_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_among_first_party_modules():
    sys.path.insert(0, str(ROOT))
    try:
        # Imports under ``if TYPE_CHECKING:`` (annotations only) never run, so they make no cycle.
        graph = grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)
    finally:
        sys.path.remove(str(ROOT))
    for module in list(graph.modules):
        if ".migrations" in module:
            graph.remove_module(module)
    assert _cycles(graph) == []


def _contracts_in_pyproject() -> list[dict]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def _floors_in_pyproject() -> list[list[str]]:
    contract = next(c for c in _contracts_in_pyproject() if c["type"] == "layers" and c["layers"][-1] == "core")
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def _between(marker: str) -> str:
    """The part of docs/architecture.md between ``<!-- marker -->`` and ``<!-- /marker -->``."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"<!-- {marker} -->" in text and f"<!-- /{marker} -->" in text, f"docs/architecture.md lacks its {marker} markers"
    return text.split(f"<!-- {marker} -->", 1)[1].split(f"<!-- /{marker} -->", 1)[0]


def _table_rows(marker: str) -> list[list[str]]:
    rows = [line.split("|") for line in _between(marker).splitlines() if line.startswith("|")][2:]  # past header and rule
    return [[cell.strip() for cell in row[1:-1]] for row in rows]


def _floors_in_docs() -> list[list[str]]:
    return [[name.strip() for name in row[1].split(",")] for row in _table_rows("floors")]


def _rooms_in_docs() -> list[tuple[str, set[str]]]:
    """(room, the apps it may touch) for each row of the rooms table: an app is named `app/`."""
    rooms = []
    for room, _owns, touches in _table_rows("rooms"):
        name = re.fullmatch(r"`(\w+)/`", room)
        assert name, f"a room is named `app/`, not {room!r}"
        rooms.append((name.group(1), set(re.findall(r"`(\w+)/`", touches))))
    return rooms


def test_every_app_stands_on_a_floor_of_the_layers_contract():
    on_floors = sorted(name for floor in _floors_in_pyproject() for name in floor)
    assert on_floors == sorted(PACKAGES)


def test_docs_architecture_holds_the_floors_table_and_a_section_for_every_app():
    assert _floors_in_docs() == _floors_in_pyproject()
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [app for app in PACKAGES if f"### `{app}/`" not in text]
    assert missing == []


def test_docs_architecture_rooms_are_the_apps_and_touch_only_the_floors_below():
    """The rooms table: every app of the layers contract once, top floor first, each allowed exactly the apps on
    the floors below its own (what import-linter lets it import), core none."""
    floors = _floors_in_pyproject()
    rooms = _rooms_in_docs()
    assert [room for room, _ in rooms] == [app for floor in floors for app in floor]
    for room, touches in rooms:
        level = next(i for i, floor in enumerate(floors) if room in floor)
        below = {app for floor in floors[level + 1:] for app in floor}
        assert touches == below, f"{room}/ may touch {sorted(below)}, docs/architecture.md says {sorted(touches)}"


def test_docs_architecture_names_every_import_contract():
    """The numbered list of contracts names each contract of pyproject.toml by its name, in its order."""
    named = [" ".join(name.split()) for name in re.findall(r"^\d+\. \*\*(.+?)\*\*", _between("contracts"), re.M | re.S)]
    assert named == [contract["name"] for contract in _contracts_in_pyproject()]
