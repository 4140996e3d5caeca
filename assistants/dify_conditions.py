"""Dify's ``metadata_condition``: checked, tested on each record's ``metadata``, and what of it narrows the search.

A condition names a field of a record's ``metadata`` (assistants/dify.py ``record_metadata``: the document's own
fields and ``RECORD_FIELDS``), and is tested on that same object, so every field a record shows can be named and
none other. The search's filters (``knowledge.retrieval.protocols.SearchFilters``) hold equalities only: with
``logical_operator`` ``and``, an ``is`` on one name narrows the search in SQL first (``pushed_down``), a superset of
what then passes the test on the record. Pure functions, no Django.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from assistants.errors import AssistantsError
from core.errors import fail
from knowledge.document_fields import RESERVED

RECORD_FIELDS = RESERVED
"""What every record's ``metadata`` gives of its chunk and document, beside the document's own fields; the one list
the records are built from and the conditions are read against (knowledge/document_fields.py keeps fields off it)."""
MAX_CONDITIONS = 32
MAX_NAME_CHARS = 200
MAX_VALUE_CHARS = 500
NEGATIONS = {"is not": "is", "not contains": "contains", "not in": "in", "≠": "=", "not empty": "empty",
             "not null": "empty"}
ALIASES = {"null": "empty", "!=": "≠", ">=": "≥", "<=": "≤", "==": "="}
POSITIVE = ("is", "contains", "start with", "end with", "in", "empty", "=", ">", "<", "≥", "≤", "before", "after")
OPERATORS = POSITIVE + tuple(NEGATIONS) + tuple(ALIASES)


@dataclass(frozen=True)
class Condition:
    names: tuple[str, ...]
    """The metadata keys (Dify's older contract sends a list): the condition holds on any of them."""
    operator: str
    """One of ``POSITIVE``; ``negated`` turns it into its Dify negation (``is not``, ``not contains``…)."""
    value: Any = None
    negated: bool = False


@dataclass(frozen=True)
class MetadataCondition:
    conditions: tuple[Condition, ...] = ()
    any_of: bool = False
    """``logical_operator`` ``or``: one condition suffices."""

    def pushed_down(self) -> tuple[tuple[str, str], ...]:
        """The ``(name, value)`` equalities the search may apply first: ``is`` on one name, under ``and``."""
        if self.any_of:
            return ()
        return tuple((c.names[0], as_text(c.value)) for c in self.conditions if _pushable(c))

    def holds(self, metadata: dict[str, Any]) -> bool:
        """Whether a record with this ``metadata`` passes the conditions (all of them; one, under ``or``)."""
        tests = [condition_holds(c, metadata) for c in self.conditions]
        if not tests:
            return True
        return any(tests) if self.any_of else all(tests)


def _pushable(c: Condition) -> bool:
    return c.operator == "is" and not c.negated and len(c.names) == 1 and isinstance(c.value, (str, int, float))


def as_text(value: Any) -> str:
    """A JSON value as PostgreSQL's ``->>`` gives it (``true``, ``12``, ``1.5``, the string itself)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _bad():
    return fail(AssistantsError.INVALID_RETRIEVAL_REQUEST, "condition", operators=", ".join(POSITIVE + tuple(NEGATIONS)))


def _condition(raw: Any) -> Condition:
    if not isinstance(raw, dict):
        raise _bad()
    names = raw.get("name")
    names = [names] if isinstance(names, str) else names
    given: Any = raw.get("comparison_operator")  # any JSON value; only a listed one passes below
    operator = ALIASES.get(given, given)
    if (not isinstance(names, list) or not names or not all(isinstance(n, str) and 0 < len(n) <= MAX_NAME_CHARS
                                                             for n in names) or operator not in OPERATORS):
        raise _bad()
    value = raw.get("value")
    values = value if isinstance(value, list) else [value]
    if not all(v is None or isinstance(v, (str, int, float)) and len(str(v)) <= MAX_VALUE_CHARS for v in values):
        raise _bad()
    positive = NEGATIONS.get(operator, operator)
    if positive != "empty" and (value is None or value == []):
        raise _bad()
    return Condition(names=tuple(names), operator=positive, value=value, negated=operator in NEGATIONS)


def metadata_condition(raw: Any) -> MetadataCondition:
    """Dify's ``metadata_condition`` checked (``None``: no condition); 400 ``invalid_retrieval_request`` otherwise."""
    if raw is None:
        return MetadataCondition()
    if not isinstance(raw, dict) or (raw.get("logical_operator") or "and") not in ("and", "or"):
        raise fail(AssistantsError.INVALID_RETRIEVAL_REQUEST, "metadata_condition", limit=MAX_CONDITIONS)
    conditions = raw.get("conditions") or []
    if not isinstance(conditions, list) or len(conditions) > MAX_CONDITIONS:
        raise fail(AssistantsError.INVALID_RETRIEVAL_REQUEST, "metadata_condition", limit=MAX_CONDITIONS)
    return MetadataCondition(conditions=tuple(_condition(c) for c in conditions),
                             any_of=raw.get("logical_operator") == "or")


# --- testing one condition ---------------------------------------------------------------------------------------

def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _instant(value: Any) -> float | None:
    """A date as a timestamp: a number (Dify sends Unix seconds) or an ISO 8601 text."""
    number = _number(value)
    if number is not None:
        return number
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _compare(order: Callable[[float, float], bool], read: Callable[[Any], float | None]):
    def test(field: Any, value: Any) -> bool:
        a, b = read(field), read(value)
        return a is not None and b is not None and order(a, b)
    return test


def _contains(field: Any, value: Any) -> bool:
    if isinstance(field, list):
        return as_text(value) in [as_text(item) for item in field]
    return as_text(value) in as_text(field)


def _in(field: Any, value: Any) -> bool:
    wanted = {as_text(v) for v in (value if isinstance(value, list) else [value])}
    items = field if isinstance(field, list) else [field]
    return any(as_text(item) in wanted for item in items)


TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "is": lambda field, value: as_text(field) == as_text(value),
    "contains": _contains,
    "start with": lambda field, value: as_text(field).startswith(as_text(value)),
    "end with": lambda field, value: as_text(field).endswith(as_text(value)),
    "in": _in,
    "=": _compare(lambda a, b: a == b, _number),
    ">": _compare(lambda a, b: a > b, _number),
    "<": _compare(lambda a, b: a < b, _number),
    "≥": _compare(lambda a, b: a >= b, _number),
    "≤": _compare(lambda a, b: a <= b, _number),
    "before": _compare(lambda a, b: a < b, _instant),
    "after": _compare(lambda a, b: a > b, _instant),
}


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def condition_holds(c: Condition, metadata: dict[str, Any]) -> bool:
    """``c`` on a record's ``metadata``: its positive form holds on the value of any of its names."""
    fields = [metadata[name] for name in c.names if name in metadata]
    if c.operator == "empty":
        positive = all(_empty(f) for f in fields)
    else:
        test = TESTS[c.operator]
        positive = any(not _empty(f) and test(f, c.value) for f in fields)
    return not positive if c.negated else positive
