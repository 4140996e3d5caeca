"""core/jsonable.py is the one coercion to JSON data: search debug records and ingested metadata alike."""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

import numpy as np

from core.jsonable import jsonable


@dataclass
class _Point:
    x: np.float32
    tags: tuple[str, ...]


class _Opaque:
    def __str__(self) -> str:
        return "opaque"


def test_numpy_dataclasses_and_containers_become_plain_json():
    value = {1: np.float64(0.5), "v": np.arange(3), "p": _Point(np.float32(2.0), ("a", "b")), "s": {7}}
    out = jsonable(value)
    assert out == {"1": 0.5, "v": [0, 1, 2], "p": {"x": 2.0, "tags": ["a", "b"]}, "s": [7]}
    assert type(out["1"]) is float and type(out["p"]["x"]) is float
    json.dumps(out)


def test_parser_metadata_dates_and_unknown_objects_become_text():
    meta = {"created": datetime.date(2024, 5, 1), "author": None, "pages": 3, "ok": True,
            "nested": {"when": datetime.datetime(2024, 5, 1, 8, 30)}, "obj": _Opaque()}
    assert jsonable(meta) == {"created": "2024-05-01", "author": None, "pages": 3, "ok": True,
                              "nested": {"when": "2024-05-01T08:30:00"}, "obj": "opaque"}
