"""Every message the Feishu and Yuque connectors show (error codes, the console's field labels) has its Chinese in
their catalogue parts (sources/locale/zh_Hans/LC_MESSAGES/feishu.po.part, yuque.po.part)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from compile_messages import parse_po  # noqa: E402 - importable only once scripts/ is on sys.path (the line above)

MODULES = {"feishu": ["service_errors", "feishu_errors", "feishu"], "yuque": ["yuque_errors", "yuque"]}


def _msgids(module: str) -> set[str]:
    tree = ast.parse((ROOT / "sources" / "kinds" / f"{module}.py").read_text())
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_"
            and isinstance(node.args[0], ast.Constant)}


@pytest.mark.parametrize("kind", sorted(MODULES))
def test_every_message_has_its_chinese(kind):
    catalogue = parse_po(ROOT / "sources" / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{kind}.po.part")
    wanted = set().union(*(_msgids(m) for m in MODULES[kind]))
    assert wanted and not wanted - set(catalogue)
    assert all(catalogue[m].strip() for m in wanted)
