"""What a `lesson.toml` may say: every table's keys, checked when the lesson loads.

A lesson is course staff's declaration, read by every command; a misspelt key
(`pointz = 1`) must not load silently as the default. `problem()` names the
file and the key in one line, or returns None when the declaration fits.
"""

from __future__ import annotations

from typing import Any

from grader.base.shapes import Shape
from grader.lesson.cases import CHECK_KEYS

_TEXT = {"type": "string"}
_TEXTS = {"type": "array", "items": _TEXT}
_NUMBER = {"type": "number"}
_VALUE: dict[str, Any] = {}  # any TOML value: an argument, an expected value


def _table(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


CASE = _table({
    "call": _TEXT, "value": _TEXT, "evaluate": _TEXT, "label": _TEXT, "args": {"type": "array"}, "kwargs": {"type": "object"},
    "expect": _VALUE, "expect_none": {"type": "boolean"}, "raises": _TEXT,
    "decimals": {"anyOf": [{"type": "integer"}, {"type": "object", "additionalProperties": {"type": "integer"}}]},
    "rtol": _NUMBER, "atol": _NUMBER, "accepts": {"type": "boolean"}, "property": _TEXT,
    "columns": _TEXTS, "note": _TEXT, "reference": _TEXT, "recompute": _TEXT, "varies": {"type": "boolean"}, "hint": _TEXT,
})
CASE["oneOf"] = [{"required": ["call"]}, {"required": ["value"]}, {"required": ["evaluate", "reference"]}]
CASE["not"] = {"anyOf": [{"required": [first, second]} for i, first in enumerate(CHECK_KEYS)
                         for second in CHECK_KEYS[i + 1:]]}
"""A case declares at most one check (cases.Check): two check keys are refused, never ranked."""

EXERCISE = _table({
    "id": _TEXT, "title": _TEXT, "kind": {"enum": ["simulated", "measured"]}, "points": _NUMBER,
    "needs": _TEXTS, "cases": {"type": "array", "items": CASE}, "scoring": {"enum": ["all", "cases"]},
    "timed": _TEXTS,
}, required=("id",))

TIMING_FIELDS = _table({"batch": _TEXT, "p50": _TEXT, "p95": _TEXT, "samples": _TEXT},
                       required=("batch", "p50", "p95", "samples"))

ANSWER_PANEL = _table({
    "exercise": _TEXT, "name": _TEXT, "y": _TEXTS, "xlog": {"type": "boolean"}, "measured": {"type": "boolean"},
    "xlabel": _TEXT, "ylabel": _TEXT, "title": _TEXT,
}, required=("exercise", "name", "y"))

COMPARE = _table({
    "title": _TEXT, "measured": _TEXT, "simulated": _TEXT, "context": _TEXT, "components": _TEXTS,
    "measured_label": _TEXT, "simulated_label": _TEXT, "xlabel": _TEXT, "ylabel": _TEXT,
}, required=("measured", "simulated", "components"))

FIGURE = _table({
    "title": _TEXT, "labels": _TEXTS, "caption": _TEXT,
    "timings": _TEXT, "timing_fields": TIMING_FIELDS, "timings_title": _TEXT, "timings_xlabel": _TEXT,
    "timings_ylabel": _TEXT,
    "series": _TEXTS, "series_labels": _TEXTS, "series_title": _TEXT, "series_ylabel": _TEXT, "scale": _TEXT,
    "answers": {"type": "array", "items": ANSWER_PANEL}, "compare": COMPARE,
})
FIGURE["dependencies"] = {"timings": ["timing_fields"]}

EARLIER_GIVEN = _table({"release": {"type": "integer", "minimum": 1}, "cell": _TEXT,
                        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}, required=("release", "cell", "sha256"))

VARIANTS = {"type": "object", "properties": {"cell": _TEXT}, "required": ["cell"],
            "additionalProperties": {"type": "array", "items": _NUMBER, "minItems": 1}}

RUBRIC_ITEM = _table({"id": _TEXT, "points": _NUMBER, "text": _TEXT}, required=("id", "points", "text"))
WRITTEN = _table({"cell": _TEXT, "title": _TEXT, "points": {"type": "number", "exclusiveMinimum": 0},
                  "rubric": {"type": "array", "items": RUBRIC_ITEM, "minItems": 1}}, required=("cell", "points", "rubric"))

LESSON = Shape(_table({
    "id": _TEXT, "title": _TEXT, "version": {"type": "integer", "minimum": 1},
    "earlier_given": {"type": "array", "items": EARLIER_GIVEN}, "variants": VARIANTS,
    "warm_imports": _TEXTS, "compile_warmup": _TEXT, "warm_cells": _TEXTS,
    "report": {"type": "object", "additionalProperties": _TEXT},
    "evidence": {"type": "object", "additionalProperties": {"enum": ["measured", "simulated"]}},
    "figure": FIGURE, "exercises": {"type": "array", "items": EXERCISE, "minItems": 1},
    "written": {"type": "array", "items": WRITTEN},
}, required=("id", "exercises")), draft="7")


def problem(spec: dict[str, Any]) -> str | None:
    """One line naming the key at fault and why, or None when `spec` is a well-formed lesson."""
    error = LESSON.first_error(spec)
    if error is None:
        return None
    where = _where(spec, list(error.absolute_path))
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known)) if isinstance(error.instance, dict) else []
        key = unknown[0] if unknown else "?"
        return f"{_join(where, key)}: unknown key (known here: {', '.join(known)})"
    if error.validator == "required":
        return f"{where or 'top level'}: {error.message}"
    if error.validator == "oneOf" and error.schema is CASE:
        return f"{where}: a case names exactly one of `call`, `value` and `evaluate` (with its `reference`)"
    if error.validator == "not" and error.schema is CASE:
        declared = [f"`{key}`" for key in CHECK_KEYS if isinstance(error.instance, dict) and key in error.instance]
        return f"{where}: a case declares one check, not {' and '.join(declared)} (one of {', '.join(CHECK_KEYS)})"
    return f"{where or 'top level'}: {error.message}"


def _where(spec: Any, path: list[Any]) -> str:
    """`exercises[2] (queue-sim).cases[0]`: the path, with each exercise's id beside its index."""
    parts: list[str] = []
    node = spec
    for step in path:
        if isinstance(step, int):
            label = f"[{step}]"
            item = node[step] if isinstance(node, list) and step < len(node) else None
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                label += f" ({item['id']})"
            parts.append(label)
        else:
            parts.append(("." if parts else "") + str(step))
        node = node[step] if isinstance(node, (list, dict)) else None
    return "".join(parts)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
