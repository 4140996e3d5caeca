"""The code's shape: the layer contracts in pyproject.toml (``[tool.importlinter]``) hold, and no first-party
module imports itself through others (function-level imports count: a cycle hidden in a function is still one)."""
from __future__ import annotations

import os
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


def _floors_in_pyproject() -> list[list[str]]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
                    and c["layers"][-1] == "core")
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def _floors_in_docs() -> list[list[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("<!-- floors -->", 1)[1].split("<!-- /floors -->", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("|")][2:]  # past header and rule
    return [[name.strip() for name in row[2].split(",")] for row in rows]


def test_every_app_stands_on_a_floor_of_the_layers_contract():
    on_floors = sorted(name for floor in _floors_in_pyproject() for name in floor)
    assert on_floors == sorted(PACKAGES)


def test_docs_architecture_holds_the_floors_table_and_a_section_for_every_app():
    assert _floors_in_docs() == _floors_in_pyproject()
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [app for app in PACKAGES if f"### `{app}/`" not in text]
    assert missing == []
