"""Evidence: a result's measured and simulated values, decoded once for the reports and the figure.

A result keeps the student's values as the wire carried them (so a signed
result is exactly what came back from the kernel). Its reader, the report or
the figure, takes `Evidence.of(result)` once, from the typed record: every
value decoded (decoded.decode), the public answers as `Shown` records, absent
values as None. Nothing in render.py or figure.py decodes wire data itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.result.parts import PublicAnswer, Section
from grader.result.record import GradeResult
from grader.run.decoded import NOTHING, decode

KINDS = ("measured", "simulated")


@dataclass(frozen=True)
class Shown:
    """One public answer, as the report shows it."""

    case: str
    """The call, as the student would write it."""
    name: str
    """The function or value asked for."""
    args: tuple[Any, ...] = ()
    """The call's arguments, decoded."""
    columns: tuple[str, ...] = ()
    """Names of the returned values, where the lesson gives them."""
    note: str = ""
    """The lesson's note on this case."""
    value: Any = NOTHING
    """The answer, decoded (NOTHING when it raised or the name is undefined)."""
    raised: str = ""
    """The exception's type, when it raised."""
    message: str = ""
    """The exception's text."""

    @property
    def has_value(self) -> bool:
        return self.value is not NOTHING

    @classmethod
    def of(cls, answer: PublicAnswer) -> Shown:
        raised = answer.raised
        return cls(answer.case, answer.name, tuple(decode(list(answer.args))), answer.columns, answer.note,
                   decode(answer.value) if answer.value is not NOTHING else NOTHING,
                   raised.type if raised is not None else "", raised.message if raised is not None else "")


@dataclass(frozen=True)
class Evidence:
    """A result's values by kind (`measured`, `simulated`): named values and, per exercise, the public answers."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    """kind -> name -> decoded value (None when the notebook left it undefined)."""
    answers: dict[str, dict[str, tuple[Shown, ...]]] = field(default_factory=dict)
    """kind -> exercise id -> its public answers."""

    @classmethod
    def of(cls, result: GradeResult) -> Evidence:
        values: dict[str, dict[str, Any]] = {}
        answers: dict[str, dict[str, tuple[Shown, ...]]] = {}
        for kind in KINDS:
            section = getattr(result, kind) or Section()
            values[kind] = {name: decode(value) if value is not None else None for name, value in section.values or ()}
            answers[kind] = {ex: tuple(Shown.of(answer) for answer in shown) for ex, shown in section.answers}
        return cls(values, answers)

    def value(self, kind: str, name: str) -> Any:
        """One named value (None when absent)."""
        return self.values.get(kind, {}).get(name)
