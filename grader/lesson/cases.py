"""A case of a lesson: one probe request and the rule that judges its answer, as lesson.toml or hidden.py states it.

A case names what to ask (`call` a function, read a `value`, or `evaluate` an
expression of the lesson's over the student's names) and what a right answer
is (a stated figure, a ValueError, a property, acceptance, the student's own
functions, or the reference's answer on the same input).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.base.errors import LessonError

KERNEL_ARG = "__kernel__"
"""An argument `{"__kernel__": name}` is the student's own value of `name`, read in the kernel."""


@dataclass(frozen=True)
class Stated:
    """`expect`: the figure the lesson states (as written; `expect_none = true` states None)."""

    value: Any


@dataclass(frozen=True)
class Raises:
    """`raises`: the call must raise this exception type (ValueError, or a subclass)."""

    type: str = "ValueError"


@dataclass(frozen=True)
class Holds:
    """`property`: the answer must pass the lesson's consistency check of this name (its `properties.py`)."""

    name: str


@dataclass(frozen=True)
class Accepts:
    """`accepts`: any answer that does not raise passes (a valid edge case)."""


@dataclass(frozen=True)
class Recompute:
    """`recompute`: the answer must equal what this expression of the lesson's gives over the student's own
    names, in their kernel."""

    expression: str


@dataclass(frozen=True)
class AskReference:
    """No check key: the reference's answer on the same input is expected."""


Check = Stated | Raises | Holds | Accepts | Recompute | AskReference
"""What a right answer to a case is: exactly one check, declared by exactly one key (the schema refuses two)."""

@dataclass(frozen=True)
class Asked:
    """What a lesson's consistency check (`properties.py`) is given about its case: plain, decoded data.

    `args` and `kwargs` are the values the student's code was given (arrays as NumPy arrays; a `{kernel =
    "name"}` argument is the student's own value as the kernel sent it), so a lesson's checks need nothing of
    the grader's: no import, no wire format.
    """

    name: str
    mode: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    hidden: bool


Checks = dict[str, Callable[[Asked, Any], list[str]]]
"""A lesson's consistency checks by name: each takes what was asked and the student's decoded answer."""

CHECK_KEYS = ("expect", "expect_none", "raises", "property", "accepts", "recompute")
"""The keys that declare a case's check; a case has at most one (none: ask the reference)."""


@dataclass(frozen=True)
class Case:
    """One probe request and the rule that judges its answer."""

    name: str
    """The student's name to call or read."""
    mode: str
    """`call` (call the name with args), `value` (read it) or `evaluate` (`name` is an expression of the lesson's,
    evaluated in the kernel over the student's names with the case's arguments bound as `args`: the student's own
    pipeline on data the seed fixes, compared with the reference's `reference` on the same arguments)."""
    args: tuple[Any, ...] = ()
    """Encoded positional arguments (arrays as `{"__array__": ...}`)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Encoded keyword arguments."""
    check: Check = AskReference()
    """What a right answer is (built at load from the case's one check key)."""
    decimals: Any = None
    """d (or {field: d}) for figures printed with d decimals: |x - printed| <= 0.5e-d + 1e-9."""
    rtol: float = 1e-6
    """Relative tolerance for other numbers."""
    atol: float = 1e-9
    """Absolute tolerance for other numbers."""
    hidden: bool = False
    """Drawn at grading time; its reference answer is never shown."""
    columns: tuple[str, ...] = ()
    """Report columns for an answer of equal-length arrays: the first argument's name, then each array's."""
    note: str = ""
    """A label the report shows with this case's answer (e.g. "planning assumption")."""
    reference: str | None = None
    """The reference function whose answer on `args` is expected (default: the reference's own `name`)."""
    shown: str = ""
    """The label as first written, kept when kernel arguments are replaced by their values."""
    hint: str = ""
    """Said beside a wrong answer to this case: the mistake the lesson warns about (`hint`)."""
    varies: bool = False
    """Its stated figure is the seed's; under a student's own numbers (variants) the reference computes it."""

    def kernel_names(self) -> tuple[str, ...]:
        """Names of the student's values this case passes as arguments (`{kernel = "name"}`)."""
        return tuple(arg[KERNEL_ARG] for arg in self.args if isinstance(arg, dict) and KERNEL_ARG in arg)

    def label(self) -> str:
        """How the case reads in feedback, e.g. `f(array([0.0, 1.0]), 2.0)`."""
        if self.shown:
            return self.shown
        if self.mode == "evaluate":
            return f"`{self.name}`"
        if self.mode == "value" and not self.args:
            return f"`{self.name}`"
        if self.mode == "value":
            return f"`{self.name}` (given {', '.join(_show(arg) for arg in self.args)})"
        parts = [_show(arg) for arg in self.args]
        parts += [f"{key}={_show(value)}" for key, value in self.kwargs.items()]
        return f"`{self.name}({', '.join(parts)})`"

    def request(self) -> dict[str, Any]:
        """The plain-data request the probe sends into the kernel."""
        request = {"name": self.name, "mode": self.mode, "args": list(self.args), "kwargs": self.kwargs}
        match self.check:
            case Recompute(expression):  # the lesson's expression, evaluated after the student's cells
                return dict(request, recompute=expression)
            case _:
                return request


def case_from_spec(spec: dict[str, Any], hidden: bool = False) -> Case:
    """Build a Case from its TOML (or hidden-generator) form."""
    if "call" in spec:
        name, mode = spec["call"], "call"
    elif "value" in spec:
        name, mode = spec["value"], "value"
    elif "evaluate" in spec:
        name, mode = spec["evaluate"], "evaluate"
        if not spec.get("reference"):
            raise LessonError(f"case {str(spec)[:80]}: an `evaluate` case names the reference function that answers it")
    else:
        raise LessonError(f"case {str(spec)[:80]} names none of `call`, `value` and `evaluate`")
    return Case(
        name=name, mode=mode,
        args=tuple(_arg(a) for a in spec.get("args", [])),
        kwargs={k: _arg(v) for k, v in spec.get("kwargs", {}).items()},
        check=check_from_spec(spec), decimals=spec.get("decimals"),
        rtol=float(spec.get("rtol", 1e-6)), atol=float(spec.get("atol", 1e-9)), hidden=hidden,
        columns=tuple(spec.get("columns", ())), note=str(spec.get("note", "")),
        reference=spec.get("reference"), varies=bool(spec.get("varies")),
        hint=str(spec.get("hint", "")), shown=str(spec.get("label", "")),
    )


def check_from_spec(spec: dict[str, Any]) -> Check:
    """The case's one check, from its one check key (a hidden generator's spec is held to the same rule)."""
    declared = [key for key in CHECK_KEYS if key in spec and (key == "expect" or spec[key] not in (None, False, ""))]
    if len(declared) > 1:
        raise LessonError(f"case {str(spec)[:80]}: a case declares one check, not {' and '.join(declared)}")
    match declared:
        case ["expect"]:
            return Stated(spec["expect"])
        case ["expect_none"]:  # TOML has no null
            return Stated(None)
        case ["raises"]:
            return Raises(str(spec["raises"]))
        case ["property"]:
            return Holds(str(spec["property"]))
        case ["accepts"]:
            return Accepts()
        case ["recompute"]:
            return Recompute(str(spec["recompute"]))
        case _:
            return AskReference()


def _arg(value: Any) -> Any:
    """TOML argument forms: `{array = [...]}` and `{normal = [rows, cols], seed = n}` become float arrays;
    `{kernel = "name"}` is the student's own value of `name`."""
    if isinstance(value, dict) and set(value) == {"kernel"}:
        return {KERNEL_ARG: str(value["kernel"])}
    if isinstance(value, dict) and "array" in value:
        return {"__array__": np.asarray(value["array"], dtype=float).tolist()}
    if isinstance(value, dict) and "normal" in value:
        drawn = np.random.default_rng(int(value.get("seed", 0))).normal(size=tuple(value["normal"]))
        return {"__array__": drawn.tolist()}
    if isinstance(value, np.ndarray):
        return {"__array__": value.astype(float).tolist()}
    return value


PASTE_ITEMS = 64
"""Inputs up to this many numbers are shown whole, so a student can paste a case and rerun it."""


def _show(value: Any) -> str:
    if isinstance(value, dict) and KERNEL_ARG in value:
        return str(value[KERNEL_ARG])
    if isinstance(value, dict) and "__array__" in value:
        flat = np.asarray(value["__array__"], dtype=float)
        if flat.size > PASTE_ITEMS:
            return f"<array shape {list(flat.shape)}: rebuild it with the seed recorded in the result>"
        return f"np.array({_literal(flat.tolist())})"
    if isinstance(value, list) and len(value) > PASTE_ITEMS:
        return f"<list of {len(value)}>"
    text = repr(value)
    records = isinstance(value, list) and all(isinstance(item, dict) for item in value)
    if len(text) > (40 if records else 4) * PASTE_ITEMS and isinstance(value, (list, dict)):  # a few records: whole
        if isinstance(value, dict):
            return f"<dict of {len(value)} keys>"
        kinds = "/".join(sorted({type(item).__name__ for item in value}))
        return f"<list of {len(value)} {kinds}s>"
    return text


def _literal(value: Any) -> str:
    """Nested lists of floats as Python source (nan and infinities as NumPy names)."""
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(float(value))
