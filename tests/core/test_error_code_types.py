"""Error codes are typed (core/errors.py's ``ErrorCode``): each app's enum beside its registrations, every raise site
names a member, and mypy refuses a code given as text or one no app declares."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from core.errors import CODES, FAILURES, ErrorCode, failure_text, stored, stored_text

ROOT = Path(__file__).resolve().parents[2]
TYPED = ("core", "knowledge", "chat", "accounts", "config", "assistants", "providers", "sources", "audit", "bots")
CALLS = {"fail", "message", "stored"}


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def test_every_declared_code_is_registered_and_every_registered_code_declared():
    declared = {member: enum for enum in _subclasses(ErrorCode) for member in enum}
    assert declared, "no app declares its codes"
    assert not [member for member in declared if member not in CODES and member not in FAILURES]
    text_only = {code for code, entry in CODES.items() if not isinstance(entry.code, ErrorCode)}
    assert text_only == set()


def test_a_code_is_its_text_on_the_wire():
    from knowledge.errors import KnowledgeError

    assert KnowledgeError.KB_NOT_FOUND == "kb_not_found" and f"{KnowledgeError.KB_NOT_FOUND}" == "kb_not_found"
    assert CODES["kb_not_found"].code is KnowledgeError.KB_NOT_FOUND


def test_one_mechanism_reads_every_stored_failure():
    from django.utils import translation

    from knowledge.errors import KnowledgeError, document_failure_text

    with translation.override("en"):
        # a document's failure: its own sentence, not the same code's answer to an upload
        assert document_failure_text("unsupported_type", "x.bin") == "This file type is not supported."
        assert failure_text(KnowledgeError.UNSUPPORTED_TYPE, "x.bin") == "This file type is not supported."
        # a source's failure: the registered message with the connector's sentence as its detail
        assert failure_text("web_timeout", "http://e.com did not answer within 5 s.") == (
            "The site did not answer in time: http://e.com did not answer within 5 s.")
        # a row that keeps its code and numbers as JSON
        assert stored_text(stored(KnowledgeError.NOT_ENOUGH_QUESTIONS, usable=1, needed=2))[0] == "not_enough_questions"
        assert failure_text("no_such_code", "the detail") == "the detail" and document_failure_text("no_such_code") == "no_such_code"


def _text_codes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CALLS and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.id}({node.args[0].value!r})")
    return found


def test_no_code_is_given_as_text_outside_tests():
    found = [hit for app in TYPED for path in sorted((ROOT / app).rglob("*.py")) if "migrations" not in path.parts
             for hit in _text_codes(path)]
    assert not found, f"name the app's ErrorCode member instead: {found}"


SNIPPET = '''from core.errors import CoreError, fail, message, stored

fail(CoreError.INVALID)
fail("nope")
message("invalid")
stored("not_enough_questions")
fail(CoreError.NOPE)
'''


def test_mypy_refuses_a_code_given_as_text_or_undeclared(tmp_path):
    (tmp_path / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(tmp_path / "mypy.ini"), "--follow-imports=silent",
                          "--ignore-missing-imports", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
                          str(tmp_path / "snippet.py")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    errors = [line.split(": error: ", 1) for line in run.stdout.splitlines() if ": error: " in line]
    assert [(where.rsplit(":", 1)[1], text) for where, text in errors] == [
        ("4", 'Argument 1 to "fail" has incompatible type "str"; expected "ErrorCode"  [arg-type]'),
        ("5", 'Argument 1 to "message" has incompatible type "str"; expected "ErrorCode"  [arg-type]'),
        ("6", 'Argument 1 to "stored" has incompatible type "str"; expected "ErrorCode"  [arg-type]'),
        ("7", '"type[CoreError]" has no attribute "NOPE"  [attr-defined]'),
    ], run.stdout + run.stderr
