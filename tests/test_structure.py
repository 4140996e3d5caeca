"""The code's size rules (issue 21): no first-party production module over 400 lines, and no function over
60 lines without a comment line at the top of its body saying why it is long (``# long because: ...``).
Migrations and tests are left out."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import first_party_packages

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = first_party_packages()
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _production_modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                  if "migrations" not in p.relative_to(ROOT).parts)


def _line_count(source: str) -> int:
    return len(source.splitlines())


def _has_reason(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    """A comment line between the signature (or the docstring) and the body's first statement."""
    body = node.body
    first = body[0]
    is_docstring = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str))
    if is_docstring and len(body) > 1:
        start, stop = first.end_lineno, body[1].lineno - 1
    else:
        start, stop = node.lineno, first.lineno - 1   # 1-based line of the def; the header ends before the body
    return any(line.strip().startswith("#") and len(line.strip()) > 1 for line in lines[start:stop])


def long_functions(source: str) -> list[tuple[str, int, int]]:
    """(name, first line, length) of each function over the limit with no reason comment at its top."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES and not _has_reason(node, lines):
                found.append((node.name, node.lineno, length))
    return found


def test_no_production_module_over_the_line_limit():
    too_long = {str(p.relative_to(ROOT)): n for p in _production_modules()
                if (n := _line_count(p.read_text(encoding="utf-8"))) > MAX_MODULE_LINES}
    assert too_long == {}


def test_no_long_function_without_a_reason_at_its_top():
    unexplained = {f"{p.relative_to(ROOT)}:{line} {name}": length for p in _production_modules()
                   for name, line, length in long_functions(p.read_text(encoding="utf-8"))}
    assert unexplained == {}


def _function(body_lines: int, header: str = "") -> str:
    return "def f(x):\n" + header + "".join(f"    x = x + {i}\n" for i in range(body_lines)) + "    return x\n"


def test_the_function_check_counts_lines_and_reads_the_reason():
    assert long_functions(_function(10)) == []
    assert long_functions(_function(70)) == [("f", 1, 72)]
    assert long_functions(_function(70, "    # long because: one table of steps, read top to bottom\n")) == []
    assert long_functions(_function(70, '    """Doc."""\n    # long because: a reason\n')) == []
    # A comment further down is not a reason at the top; a docstring alone is not one either.
    assert long_functions(_function(70, '    """Doc."""\n')) == [("f", 1, 73)]
    late = "def f(x):\n    x = 1\n    # long because: too late to count\n" + "".join(f"    x = x + {i}\n" for i in range(70))
    assert long_functions(late) == [("f", 1, 73)]
