"""Step 3, probe: after the student's cells, call their names on the cases.

One probe cell per exercise runs in the student's kernel. Its inputs travel as
one JSON string literal decoded there, never as code; it only calls the names
and prints one line: a per-grade nonce followed by the plain-data answers. The
grader parses that line, capped in size; nothing in the kernel judges anything.
"""

from __future__ import annotations

import functools
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.lessons import Case

WIRE_SOURCE = (Path(__file__).with_name("wire.py")).read_text(encoding="utf-8")

# The probe program. It runs inside one function so that it leaves no names
# behind in the student's namespace; `globals()` there is the student's namespace.
_PROGRAM = r'''
def __grader_probe(user, request_text, wire_source):
    import json, sys
    wire = {}
    exec(compile(wire_source, "<grader wire>", "exec"), wire)
    encode, decode = wire["encode"], wire["decode"]
    request = json.loads(request_text)
    answers = {"defined": {name: name in user for name in request["needs"]}, "results": []}
    for case in request["cases"]:
        own = [arg["__kernel__"] for arg in case["args"] if isinstance(arg, dict) and "__kernel__" in arg]
        absent = [name for name in [case["name"]] + own if name not in user]
        if absent:
            answers["results"].append({"missing": absent[0]})
            continue
        echo = {}
        try:
            args = [user[arg["__kernel__"]] if isinstance(arg, dict) and "__kernel__" in arg else arg
                    for arg in decode(case["args"])]
            if own:  # the student's own values the case was asked on, as they were before the call
                echo = {"args": encode(args)}
            target = user[case["name"]]
            if case["mode"] == "value":
                value = target
            else:
                value = target(*args, **decode(case["kwargs"]))
            answers["results"].append(dict(echo, value=encode(value)))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            try:
                message = str(exc)[:300]
            except BaseException:
                message = "<unprintable>"
            answers["results"].append(dict(echo, raised={"type": type(exc).__name__,
                                                         "value_error": isinstance(exc, ValueError),
                                                         "message": message}))
    sys.stdout.write("\n" + request["nonce"] + json.dumps(answers) + "\n")
    sys.stdout.flush()
'''


@dataclass(frozen=True)
class ExercisePlan:
    """What to ask the kernel for one exercise."""

    exercise_id: str
    """The exercise these cases belong to."""
    needs: tuple[str, ...]
    """Names whose presence is reported."""
    cases: tuple[Case, ...]
    """Public cases first, then hidden ones."""


@dataclass(frozen=True)
class Probe:
    """What came back from one exercise's probe cell."""

    exercise_id: str
    """The exercise probed."""
    status: str
    """`ok`, `timeout` (the probe ran past its limit), `died` (the kernel died in it), `skipped` or `unreadable`."""
    defined: dict[str, bool] = field(default_factory=dict)
    """Which needed names were defined."""
    results: tuple[dict[str, Any], ...] = ()
    """Per case: {"value": plain data} | {"raised": {...}} | {"missing": name}; with "args" (the student's own
    values it was asked on) when the case passes kernel values."""
    detail: str = ""
    """Why the probe is not `ok`."""


def new_nonce() -> str:
    """A marker that student output cannot guess in advance."""
    return "@@grader-probe-" + secrets.token_hex(8) + "@@"


def cell_source(plan: ExercisePlan, nonce: str) -> str:
    """The probe cell for one exercise: fixed code plus one JSON string literal."""
    request = {"nonce": nonce, "needs": list(plan.needs), "cases": [case.request() for case in plan.cases]}
    request_literal = json.dumps(json.dumps(request, allow_nan=True))
    wire_literal = json.dumps(WIRE_SOURCE)
    return (
        _PROGRAM
        + f"__grader_probe(globals(), {request_literal}, {wire_literal})\n"
        + "del __grader_probe\n"
    )


def collect(plan: ExercisePlan, outcome: dict[str, Any], nonce: str, max_bytes: int) -> Probe:
    """Parse one probe cell's outcome (from `run.execute`) into a Probe."""
    status = outcome.get("status")
    if status in ("timeout", "died", "skipped"):
        return Probe(plan.exercise_id, status, detail=outcome.get("detail", ""))
    text = outcome.get("stdout", "")
    line = next((ln for ln in reversed(text.splitlines()) if ln.startswith(nonce)), None)
    if line is None:
        why = outcome.get("error") or "the probe printed no answer (was sys.stdout replaced?)"
        return Probe(plan.exercise_id, "unreadable", detail=why)
    if len(line) > max_bytes:
        return Probe(plan.exercise_id, "unreadable", detail=f"the answers were larger than {max_bytes} bytes")
    try:
        data = json.loads(line[len(nonce):])
    except (ValueError, RecursionError):
        return Probe(plan.exercise_id, "unreadable", detail="the probe's answer could not be parsed")
    problem = answer_problem(data)
    if problem:
        return Probe(plan.exercise_id, "unreadable", detail=f"the probe's answer was not plain data ({problem})")
    results = tuple(data["results"])
    if len(results) != len(plan.cases):
        return Probe(plan.exercise_id, "unreadable", detail="the probe's answer had the wrong number of results")
    return Probe(plan.exercise_id, "ok", defined=dict(data["defined"]), results=results)


MAX_ANSWER_DEPTH = 48
"""Nesting of a probe answer beyond this is junk (encode stops at 12 containers, arrays at 32 dims)."""

# The probe's answer, as the wire encodes it. The student can replace anything
# in the kernel (json.dumps included), so nothing reaches the judge unchecked.
_WIRE = {"anyOf": [
    {"type": ["null", "boolean", "number", "string"]},
    {"type": "array", "items": {"$ref": "#/$defs/wire"}},
    {"type": "object", "required": ["__array__"], "additionalProperties": False,
     "properties": {"__array__": {"type": ["array", "number", "boolean"]},
                    "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "kind": {"enum": ["b", "i", "u", "f"]}}},
    {"type": "object", "required": ["__dict__"], "additionalProperties": False,
     "properties": {"__dict__": {"type": "array", "items": {
         "type": "array", "minItems": 2, "maxItems": 2, "items": {"$ref": "#/$defs/wire"}}}}},
    {"type": "object", "required": ["__object__"], "additionalProperties": False,
     "properties": {"__object__": {"type": "string"}}},
]}
ANSWER_SCHEMA = {
    "$defs": {"wire": _WIRE},
    "type": "object", "required": ["defined", "results"],
    "properties": {
        "defined": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "results": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["value"], "additionalProperties": False,
             "properties": {"value": {"$ref": "#/$defs/wire"}, "args": {"type": "array", "items": {"$ref": "#/$defs/wire"}}}},
            {"type": "object", "required": ["raised"], "additionalProperties": False,
             "properties": {"args": {"type": "array", "items": {"$ref": "#/$defs/wire"}},
                            "raised": {"type": "object", "required": ["type", "value_error", "message"],
                                       "additionalProperties": False,
                                       "properties": {"type": {"type": "string", "maxLength": 200},
                                                      "value_error": {"type": "boolean"},
                                                      "message": {"type": "string", "maxLength": 2000}}}}},
            {"type": "object", "required": ["missing"], "additionalProperties": False,
             "properties": {"missing": {"type": "string"}}},
        ]}},
    },
}


def _depth(data: Any) -> int:
    """Nesting depth, without recursion (a hostile answer may nest thousands deep)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_ANSWER_DEPTH:
            break
        if isinstance(item, list):
            stack.extend((x, level + 1) for x in item if isinstance(x, (list, dict)))
        elif isinstance(item, dict):
            stack.extend((x, level + 1) for x in item.values() if isinstance(x, (list, dict)))
    return deepest


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(ANSWER_SCHEMA)


def answer_problem(data: Any) -> str:
    """Why a probe answer is not the plain data the judge reads ("" when it is)."""
    import jsonschema

    if _depth(data) > MAX_ANSWER_DEPTH:
        return f"nested deeper than {MAX_ANSWER_DEPTH} levels"
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is None:
        return ""
    where = "/".join(map(str, error.absolute_path)) or "top level"
    return f"at {where[:80]}: {error.message[:120]}"


ENVIRONMENT_KEY = "__environment__"
EVIDENCE_KEY = "__evidence__"

_ENVIRONMENT = r'''
def __grader_environment(nonce):
    import json, os, platform, sys
    found = {"kernel_python": platform.python_version(), "kernel_pid_namespace": os.getpid() <= 3}
    for name in ("numpy", "jax", "jaxlib"):
        module = sys.modules.get(name)
        found[f"kernel_{name}"] = getattr(module, "__version__", None) if module else None
    jax = sys.modules.get("jax")
    try:
        devices = jax.devices() if jax else []
        found["jax_devices"] = [str(d) for d in devices] if jax else None
        found["jax_backend"] = jax.default_backend() if jax else None
        found["jax_device_kind"] = devices[0].device_kind if devices else None
        found["jax_device_count"] = str(len(devices)) if jax else None
    except Exception as exc:
        found["jax_devices"] = f"unavailable: {type(exc).__name__}"
    sys.stdout.write("\n" + nonce + json.dumps(found) + "\n")
    sys.stdout.flush()
'''


def environment_cell(nonce: str) -> str:
    """A tail cell reporting the kernel's versions and JAX devices (not graded)."""
    return _ENVIRONMENT + f"__grader_environment({json.dumps(nonce)})\ndel __grader_environment\n"


def collect_environment(outcome: dict[str, Any], nonce: str) -> dict[str, Any]:
    """The environment cell's report, or an empty dict when it did not run."""
    line = next((ln for ln in reversed(outcome.get("stdout", "").splitlines()) if ln.startswith(nonce)), None)
    if line is None or len(line) > 10_000:
        return {}
    try:
        data = json.loads(line[len(nonce):])
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: _short(v) for k, v in data.items() if k in KERNEL_FACTS and isinstance(v, (str, bool, list, type(None)))}


KERNEL_FACTS = ("kernel_python", "kernel_pid_namespace", "kernel_numpy", "kernel_jax", "kernel_jaxlib", "jax_devices",
               "jax_backend", "jax_device_kind", "jax_device_count")
"""The only keys the kernel's environment cell may report (the student can rewrite that cell's output)."""


def _short(value: Any) -> Any:
    if isinstance(value, list):
        return [str(item)[:100] for item in value[:16]]
    return value[:100] if isinstance(value, str) else value
