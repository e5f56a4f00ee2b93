"""Probe: after the student's cells, call their names on the cases.

One probe cell runs in the student's kernel, with one section per exercise:
each section has its own time limit, and is left out of a second attempt if it
kills or hangs the kernel (sections.Sectioned). Its inputs travel as one JSON string
literal decoded there, never as code; it only calls the names and prints, per
exercise, one line: a per-grade nonce, the exercise and the plain-data answers.
The grader parses that line, capped in size, checks it against ANSWER_SCHEMA and
decodes it into typed answers (decoded.Answer); nothing in the kernel judges anything.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.base import shapes
from grader.lesson.cases import Case
from grader.run import sections
from grader.run.cells import ProbeOutcome
from grader.run.decoded import Answer

WIRE_SOURCE = (Path(__file__).with_name("wire.py")).read_text(encoding="utf-8")

# The probe program. It runs inside one function so that it leaves no names
# behind in the student's namespace; `user` is the student's namespace. Each
# exercise is a section: announced, bounded by its own timer, then answered on a
# line of its own, so one round trip probes every exercise.
_PROGRAM = r"""
def __grader_probe(user, request_text, wire_source, seconds, journal):
    import json, os, signal, sys
    BEGIN, ANSWER = __MARKS__
    wire = {}
    exec(compile(wire_source, "<grader wire>", "exec"), wire)
    encode, decode = wire["encode"], wire["decode"]
    request = json.loads(request_text)
    nonce = request["nonce"]

    class Expired(BaseException):
        pass

    def expire(signum, frame):
        raise Expired()

    def say(line):
        sys.stdout.write("\n" + nonce + line + "\n")
        sys.stdout.flush()

    def note(line):  # on file as soon as write returns, even if the kernel dies the next instant
        if not journal:
            return
        try:
            fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        except OSError:
            return
        try:
            os.write(fd, (nonce + line + "\n").encode())
        except OSError:
            pass
        finally:
            os.close(fd)

    def inputs(case):
        return [user[arg["__kernel__"]] if isinstance(arg, dict) and "__kernel__" in arg else arg
                for arg in decode(case["args"])]

    def recomputed(case, result):  # the lesson's own expression over the student's names, for a consistency check
        if not case.get("recompute"):
            return result
        try:
            result["own"] = {"value": encode(eval(case["recompute"], user))}
        except (KeyboardInterrupt, Expired):
            raise
        except BaseException as exc:
            result["own"] = {"raised": {"type": type(exc).__name__, "value_error": isinstance(exc, ValueError)}}
        return result

    def answer(section):
        answers = {"defined": {name: name in user for name in section["needs"]}, "results": []}
        for case in section["cases"]:
            own = [arg["__kernel__"] for arg in case["args"] if isinstance(arg, dict) and "__kernel__" in arg]
            named = [] if case["mode"] == "evaluate" else [case["name"]]
            absent = [name for name in named + own if name not in user]
            if absent:
                missing = {"missing": absent[0]}
                if own and absent == [case["name"]]:  # its inputs exist: the judge asks the reference on them
                    try:
                        missing["args"] = encode(inputs(case))
                    except (KeyboardInterrupt, Expired):
                        raise
                    except BaseException:
                        pass
                answers["results"].append(recomputed(case, missing))
                continue
            echo = {}
            try:
                args = inputs(case)
                if own:  # the student's own values the case was asked on, as they were before the call
                    echo = {"args": encode(args)}
                if case["mode"] == "evaluate":  # the lesson's expression over the student's names
                    target = eval(compile(case["name"], "<grader evaluate>", "eval"), user, {"args": args})
                else:
                    target = user[case["name"]]
                if case["mode"] in ("value", "evaluate"):
                    value = target
                else:
                    value = target(*args, **decode(case["kwargs"]))
                answers["results"].append(recomputed(case, dict(echo, value=encode(value))))
            except (KeyboardInterrupt, Expired):
                raise
            except BaseException as exc:
                try:
                    message = str(exc)[:300]
                except BaseException:
                    message = "<unprintable>"
                answers["results"].append(dict(echo, raised={"type": type(exc).__name__,
                                                             "value_error": isinstance(exc, ValueError),
                                                             "message": message}))
        return answers

    previous = signal.signal(signal.SIGALRM, expire)
    try:
        for section in request["sections"]:
            note(BEGIN + section["key"])
            say(BEGIN + section["key"])
            try:
                signal.setitimer(signal.ITIMER_REAL, seconds)
                answers = answer(section)
            except (KeyboardInterrupt, Expired):
                answers = {"timeout": True}
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            note(ANSWER + section["key"])
            say(ANSWER + section["key"] + ":" + json.dumps(answers))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
"""


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
    results: tuple[Answer, ...] = ()
    """Per case, its answer, decoded (decoded.Answer)."""
    detail: str = ""
    """Why the probe is not `ok`."""


def new_nonce() -> str:
    """A marker that student output cannot guess in advance."""
    return "@@grader-probe-" + secrets.token_hex(8) + "@@"


_PROGRAM_LITERAL = json.dumps(_PROGRAM.replace("__MARKS__", repr((sections.SECTION_BEGIN, sections.SECTION_ANSWER))))
_WIRE_LITERAL = json.dumps(WIRE_SOURCE)


def cell_source(plans: list[ExercisePlan] | tuple[ExercisePlan, ...], nonce: str, seconds: float,
                journal: str = "") -> str:
    """The probe cell for these exercises: one line whose program, wire code and request are string literals.

    IPython tokenizes every cell before it runs it; a string literal is one
    token, so the cell costs the kernel little more than a bare call would.
    The program is compiled into a fresh namespace of its own: no name is left
    in the student's. Each exercise may take `seconds`; each one's start and end are
    also noted in the file `journal` (sections.JOURNAL), if one is given.
    """
    request = {"nonce": nonce, "sections": [{"key": plan.exercise_id, "needs": list(plan.needs),
                                             "cases": [case.request() for case in plan.cases]} for plan in plans]}
    request_literal = json.dumps(json.dumps(request, allow_nan=True))
    return (f"(lambda space: exec(compile({_PROGRAM_LITERAL}, '<grader probe>', 'exec'), space) "
            f"or space['__grader_probe'])({{}})(globals(), {request_literal}, {_WIRE_LITERAL}, {float(seconds)!r}, "
            f"{json.dumps(journal)})\n")


def sectioned(plans: list[ExercisePlan], nonce: str, seconds: float) -> sections.Sectioned:
    """Every exercise's probe as one tail cell; an exercise that kills or hangs the kernel is left out on retry."""
    by_key = {plan.exercise_id: plan for plan in plans}
    return sections.Sectioned(tuple(by_key),
                         lambda keys, journal: cell_source([by_key[k] for k in keys], nonce, seconds, journal),
                         nonce, seconds)


def collect(plan: ExercisePlan, outcome: ProbeOutcome, nonce: str, max_bytes: int) -> Probe:
    """Parse one probe cell's outcome (from `run.execute`) into a Probe."""
    status = outcome.status
    if status in ("timeout", "died", "skipped"):
        return Probe(plan.exercise_id, status, detail=outcome.detail)
    text = outcome.stdout
    prefix = f"{nonce}{sections.SECTION_ANSWER}{plan.exercise_id}:"
    line = next((ln for ln in reversed(text.splitlines()) if ln.startswith(prefix)), None)
    if line is None:
        why = outcome.error or "the probe printed no answer (was sys.stdout replaced?)"
        return Probe(plan.exercise_id, "unreadable", detail=why)
    if len(line) - len(prefix) > max_bytes:
        return Probe(plan.exercise_id, "unreadable", detail=f"the answers were larger than {max_bytes} bytes")
    try:
        data = json.loads(line[len(prefix):])
    except (ValueError, RecursionError):
        return Probe(plan.exercise_id, "unreadable", detail="the probe's answer could not be parsed")
    if data == {"timeout": True}:
        return Probe(plan.exercise_id, "timeout", detail="timed out")
    problem = answer_problem(data)
    if problem:
        return Probe(plan.exercise_id, "unreadable", detail=f"the probe's answer was not plain data ({problem})")
    if len(data["results"]) != len(plan.cases):
        return Probe(plan.exercise_id, "unreadable", detail="the probe's answer had the wrong number of results")
    try:
        results = tuple(Answer.from_wire(result) for result in data["results"])
    except (TypeError, ValueError, OverflowError, RecursionError) as err:
        return Probe(plan.exercise_id, "unreadable", detail=f"the probe's answer could not be decoded ({type(err).__name__})")
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
_OWN = {"oneOf": [  # a consistency check's recomputation (Case.recompute)
    {"type": "object", "required": ["value"], "additionalProperties": False, "properties": {"value": {"$ref": "#/$defs/wire"}}},
    {"type": "object", "required": ["raised"], "additionalProperties": False,
     "properties": {"raised": {"type": "object", "required": ["type", "value_error"], "additionalProperties": False,
                               "properties": {"type": {"type": "string", "maxLength": 200},
                                              "value_error": {"type": "boolean"}}}}},
]}
ANSWER_SCHEMA = {
    "$defs": {"wire": _WIRE, "own": _OWN},
    "type": "object", "required": ["defined", "results"],
    "properties": {
        "defined": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "results": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["value"], "additionalProperties": False,
             "properties": {"value": {"$ref": "#/$defs/wire"}, "args": {"type": "array", "items": {"$ref": "#/$defs/wire"}},
                            "own": {"$ref": "#/$defs/own"}}},
            {"type": "object", "required": ["raised"], "additionalProperties": False,
             "properties": {"args": {"type": "array", "items": {"$ref": "#/$defs/wire"}},
                            "raised": {"type": "object", "required": ["type", "value_error", "message"],
                                       "additionalProperties": False,
                                       "properties": {"type": {"type": "string", "maxLength": 200},
                                                      "value_error": {"type": "boolean"},
                                                      "message": {"type": "string", "maxLength": 2000}}}}},
            {"type": "object", "required": ["missing"], "additionalProperties": False,
             "properties": {"missing": {"type": "string"}, "args": {"type": "array", "items": {"$ref": "#/$defs/wire"}},
                            "own": {"$ref": "#/$defs/own"}}},
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


_ANSWER = shapes.Shape(ANSWER_SCHEMA)


def warm() -> None:
    """Compile the answer checks now (a batch parent does this once, before forking)."""
    _ANSWER.warm()


def answer_problem(data: Any) -> str:
    """Why a probe answer is not the plain data the judge reads ("" when it is)."""
    if _depth(data) > MAX_ANSWER_DEPTH:
        return f"nested deeper than {MAX_ANSWER_DEPTH} levels"
    error = _ANSWER.first_error(data)
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
        found["jax_matmul_precision"] = str(jax.config.jax_default_matmul_precision) if jax else None
    except Exception as exc:
        found["jax_devices"] = f"unavailable: {type(exc).__name__}"
    sys.stdout.write("\n" + nonce + json.dumps(found) + "\n")
    sys.stdout.flush()
'''


def environment_cell(nonce: str) -> str:
    """A tail cell reporting the kernel's versions and JAX devices (not graded)."""
    return _ENVIRONMENT + f"__grader_environment({json.dumps(nonce)})\ndel __grader_environment\n"


def collect_environment(outcome: ProbeOutcome, nonce: str) -> dict[str, Any]:
    """The environment cell's report, or an empty dict when it did not run."""
    line = next((ln for ln in reversed(outcome.stdout.splitlines()) if ln.startswith(nonce)), None)
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
               "jax_backend", "jax_device_kind", "jax_device_count", "jax_matmul_precision")
"""The only keys the kernel's environment cell may report (the student can rewrite that cell's output)."""


def _short(value: Any) -> Any:
    if isinstance(value, list):
        return [str(item)[:100] for item in value[:16]]
    return value[:100] if isinstance(value, str) else value
