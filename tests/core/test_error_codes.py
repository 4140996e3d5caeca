"""The one error-code registry (core/errors.py): every code first-party code answers is registered, once,
with a status and a message translated into Chinese; docs/api.md lists them all; stored failures translate at display."""
from __future__ import annotations

import inspect
import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import translation
from rest_framework import exceptions as drf_exceptions

from core import errors
from core.errors import CODES, ApplicationError, fail, stored, stored_text
from knowledge.management.commands.error_codes import DOC, documented_table, markdown_table

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("knowledge", "chat", "accounts", "config", "assistants", "providers", "sources", "bots")

# Where first-party code names an error code: a registry call, an exception's ``code=``, a class's
# ``default_code``, the chat endpoints' error helpers, and the (status, code, message) of the request limits.
_PATTERNS = [
    re.compile(r"""(?<![\w.])(?:fail|message|stored|_error|self\.send_error)\(\s*["']([a-z_]+)["']"""),
    re.compile(r"""(?<![\w.])code\s*=\s*["']([a-z_]+)["']"""),
    re.compile(r"""\bdefault_code\s*=\s*["']([a-z_]+)["']"""),
    re.compile(r"""["']code["']\s*:\s*["']([a-z_]+)["']"""),
    re.compile(r"""return\s+\d{3},\s*["']([a-z_]+)["']"""),
]
# Field-level codes of a form or serializer (inside ``fields``, never an answer's code) are not API codes.
_FIELD_LEVEL = re.compile(r"forms\.ValidationError|serializers\.ValidationError")


def codes_named_in(text: str) -> set[str]:
    found = set()
    for line in text.splitlines():
        if _FIELD_LEVEL.search(line):
            continue
        for pattern in _PATTERNS:
            found.update(pattern.findall(line))
    return found


def first_party_sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_the_scan_sees_each_way_of_naming_a_code():
    planted = '''raise fail("a_code", limit=3)
raise ValidationFailed(msg, code="b_code")
    default_code = "c_code"
await self.send_error("d_code", text)
return 414, "e_code", message
raise forms.ValidationError(self.error_messages["required"], code="not_an_api_code")
self.fail("max_length", max_length=3)
'''
    assert codes_named_in(planted) == {"a_code", "b_code", "c_code", "d_code", "e_code"}


def test_every_code_first_party_code_names_is_registered():
    unregistered = {}
    for path in first_party_sources():
        for code in codes_named_in(path.read_text(encoding="utf-8")) - set(CODES):
            unregistered.setdefault(code, []).append(str(path.relative_to(ROOT)))
    assert not unregistered, f"register these in the app's errors.py (core.errors.CODES): {unregistered}"


def test_class_defaults_and_drf_codes_are_registered_with_their_status():
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, ApplicationError):
            assert cls.default_code in CODES, cls
            assert CODES[cls.default_code].http_status == cls.status_code, cls
    for _, cls in inspect.getmembers(drf_exceptions, inspect.isclass):
        if issubclass(cls, drf_exceptions.APIException) and cls is not drf_exceptions.APIException:
            code = "invalid" if cls is drf_exceptions.ValidationError else cls.default_code
            assert code in CODES, cls
            assert CODES[code].http_status == cls.status_code or cls is drf_exceptions.ValidationError, cls


def test_a_registered_code_raises_its_class_with_its_message():
    with translation.override("en"):
        exc = fail("question_too_long", limit=1000)
        assert type(exc) is errors.ValidationFailed and exc.code == "question_too_long" and exc.status_code == 400
        assert exc.message == "The question is over 1000 characters."
        gone = fail("kb_not_found")
        assert type(gone) is errors.NotFound and gone.status_code == 404
        assert fail("invalid_page_size", limit=100, on_field="page_size").extra["fields"]["page_size"] == [
            "page_size must be a whole number from 1 to 100."]
        assert fail("busy", "new_version").message == "A new version of this document is already being processed."
    with translation.override("zh-hans"):
        assert fail("question_too_long", limit=1000).message == "问题超过了 1000 个字符。"
    with pytest.raises(KeyError):
        fail("query_too_long", limit=1000)  # merged into question_too_long: one rule, one code


def _placeholders(template: str) -> dict:
    return {name: 7 for name in re.findall(r"%\((\w+)\)", template)}


def test_every_message_formats_and_reads_in_chinese():
    untranslated = []
    for entry in CODES.values():
        for variant in (None, *entry.variants):
            with translation.override("en"):
                english = str(entry.message if variant is None else entry.variants[variant])
                entry.text(variant, **_placeholders(english))  # every named parameter is a plain %(name)s
            with translation.override("zh-hans"):
                chinese = entry.text(variant, **_placeholders(english))
            if chinese == english % _placeholders(english) or not re.search(r"[\u4e00-\u9fff]", chinese):
                untranslated.append((entry.code, variant, english))
    assert not untranslated, f"add these to locale/zh_Hans/LC_MESSAGES/django.po: {untranslated}"


def test_docs_list_every_registered_code_with_its_status():
    table = documented_table(DOC.read_text(encoding="utf-8"))
    assert table is not None, "docs/api.md lacks the error-code markers"
    assert table == markdown_table(), "docs/api.md is out of date: run manage.py error_codes --markdown --write"
    for entry in CODES.values():
        status = str(entry.http_status) if entry.http_status is not None else "stored"
        assert f"| `{entry.code}` | {status} |" in table


def test_the_command_prints_the_table():
    out = io.StringIO()
    call_command("error_codes", "--markdown", stdout=out)
    assert out.getvalue() == markdown_table() and "| `question_too_long` | 400 |" in out.getvalue()


def test_a_stored_failure_is_translated_when_read():
    raw = stored("not_enough_questions", usable=2, needed=3)
    with translation.override("en"):
        assert stored_text(raw) == ("not_enough_questions", "The KB has 2 usable passages; calibration needs at least 3.")
    with translation.override("zh-hans"):
        code, text = stored_text(raw)
        assert code == "not_enough_questions" and "2" in text and "3" in text and "校准" in text
    assert stored_text("RuntimeError: boom") == ("", "RuntimeError: boom")
    assert stored_text('{"code": "no_such_code", "params": {}}') == ("", '{"code": "no_such_code", "params": {}}')
