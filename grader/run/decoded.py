"""Answers: what the kernel said for each case, decoded once into typed records.

The probe's answer line is checked against its JSON schema (probe.py), then
turned into `Answer` records here, and nowhere else: the judge, the evidence
and the reports read these records, never the wire dicts. Values are decoded
by `wire.decode`, the one decoder (the kernel decodes a case's inputs with the
same function); a value the kernel could not encode, or that does not decode,
is an `Opaque`.

A case's own arguments (`Answer.args`) stay in their wire form: that is the
form a case's inputs travel in (`lessons.Case.args`), and the reference is
asked on them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.run import wire
from grader.run.wire import Opaque, decode

__all__ = ["NOTHING", "NO_ANSWER", "Answer", "Opaque", "Own", "Raised", "as_answered", "decode"]


class _Nothing:
    """No value at all (None is a value a student may return)."""

    _instance: _Nothing | None = None

    def __new__(cls) -> _Nothing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOTHING"

    def __reduce__(self) -> str:
        return "NOTHING"  # unpickles as this module's one instance


NOTHING = _Nothing()


@dataclass(frozen=True)
class Raised:
    """An exception the student's code raised for a case."""

    type: str
    """The exception's class name."""
    value_error: bool
    """Whether it is a ValueError (or a subclass)."""
    message: str = ""
    """Its text, cut short in the kernel."""

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Raised:
        return cls(str(data["type"]), bool(data["value_error"]), str(data.get("message", "")))

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.type, "value_error": self.value_error, "message": self.message}


@dataclass(frozen=True)
class Own:
    """A consistency check's recomputation in the student's kernel: a value, or what it raised."""

    value: Any = NOTHING
    raised: Raised | None = None


@dataclass(frozen=True)
class Answer:
    """One case's answer: a value, an exception, or a missing name (exactly one of them)."""

    value: Any = NOTHING
    """The decoded value (NOTHING when the case raised or the name is missing)."""
    wire: Any = None
    """The value as the wire carried it: what a result records as evidence."""
    raised: Raised | None = None
    """What the call raised."""
    missing: str | None = None
    """The name that was not defined."""
    args: tuple[Any, ...] | None = None
    """The student's own values the case was asked on, in wire form (only for cases that pass kernel values)."""
    own: Own | None = None
    """The recomputation from the student's own functions (only for consistency checks)."""

    @property
    def has_value(self) -> bool:
        return self.value is not NOTHING

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Answer:
        """One schema-checked result of the probe (probe.ANSWER_SCHEMA) as a record."""
        own = None
        if isinstance(data.get("own"), dict):
            mine = data["own"]
            own = Own(decode(mine["value"])) if "value" in mine else Own(raised=Raised.from_wire(mine["raised"]))
        args = tuple(data["args"]) if "args" in data else None
        if "value" in data:
            return cls(decode(data["value"]), data["value"], args=args, own=own)
        if "raised" in data:
            return cls(raised=Raised.from_wire(data["raised"]), args=args, own=own)
        return cls(missing=str(data.get("missing", "")), args=args, own=own)


NO_ANSWER = Answer()
"""What an exercise whose probe did not run answered (nothing)."""


def as_answered(value: Any) -> Any:
    """A value computed here (the reference's) in the form a student's answer takes after the wire: tuples as
    lists, JAX and NumPy arrays as bool or float arrays, objects as Opaque, so both compare under one rule."""
    return decode(wire.encode(value))
