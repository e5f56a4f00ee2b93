"""The parts of a result, typed: what was shown, how the run went, which cells ran, what the student wrote.

Each part is made once (by grading.py, or by a batch for `Submitted`), kept
typed inside the grader, turned into the contract's JSON only by `to_dict`,
and read back from a written result by `from_dict` (record.read_result), so
`from_dict(p.to_dict()) == p` for every part. The host's environment is the
one open mapping a result keeps: its keys are whatever the host and the kernel
report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from grader.run.decoded import NOTHING, Raised

Pairs = tuple[tuple[str, Any], ...]
"""An ordered mapping, frozen (a record's fields never change under it)."""


def _pairs(data: Any) -> Pairs:
    return tuple((str(k), v) for k, v in data.items()) if isinstance(data, Mapping) else ()


@dataclass(frozen=True)
class PublicAnswer:
    """One public case and the student's answer as the wire carried it (a result keeps it undecoded)."""

    case: str
    name: str
    args: tuple[Any, ...] = ()
    kwargs: Pairs = ()
    columns: tuple[str, ...] = ()
    note: str = ""
    value: Any = NOTHING
    """The value in wire form (NOTHING when the case raised or the name was missing)."""
    raised: Raised | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"case": self.case, "name": self.name, "args": list(self.args),
                                "kwargs": dict(self.kwargs), "columns": list(self.columns), "note": self.note}
        if self.value is not NOTHING:
            data["value"] = self.value
        elif self.raised is not None:
            data["raised"] = self.raised.to_wire()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PublicAnswer:
        raised = data.get("raised")
        return cls(str(data.get("case", "")), str(data.get("name", "")), tuple(data.get("args") or ()),
                   _pairs(data.get("kwargs")), tuple(str(c) for c in data.get("columns") or ()),
                   str(data.get("note") or ""), data.get("value", NOTHING),
                   Raised.from_wire(dict(raised)) if isinstance(raised, Mapping) and "value" not in data else None)


@dataclass(frozen=True)
class MeasuredHow:
    """How the measured values were taken (they are never graded on speed)."""

    note: str
    matmul_precision: Any
    percentile_method: str
    units: str
    jobs_at_once: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"note": self.note, "matmul_precision": self.matmul_precision,
                "percentile_method": self.percentile_method, "units": self.units, "jobs_at_once": self.jobs_at_once}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MeasuredHow:
        return cls(str(data.get("note", "")), data.get("matmul_precision"), str(data.get("percentile_method", "")),
                   str(data.get("units", "")), data.get("jobs_at_once"))


@dataclass(frozen=True)
class Section:
    """A result's measured or simulated values: per exercise its public answers, and the named values."""

    answers: tuple[tuple[str, tuple[PublicAnswer, ...]], ...] = ()
    values: Pairs | None = ()
    """Name -> value in wire form (None when the notebook left it undefined); None for a record without them."""
    how: MeasuredHow | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"how": self.how.to_dict()} if self.how is not None else {}
        data["answers"] = {exercise: [a.to_dict() for a in shown] for exercise, shown in self.answers}
        if self.values is not None:
            data["values"] = dict(self.values)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Section | None:
        if not isinstance(data, Mapping) or not data:
            return None
        found = data.get("answers")
        answers: Mapping[Any, Any] = found if isinstance(found, Mapping) else {}
        return cls(tuple((str(ex), tuple(PublicAnswer.from_dict(e) for e in shown if isinstance(e, Mapping)))
                         for ex, shown in answers.items() if isinstance(shown, list)),
                   _pairs(data["values"]) if "values" in data else None,
                   MeasuredHow.from_dict(data["how"]) if isinstance(data.get("how"), Mapping) else None)


@dataclass(frozen=True)
class RunFacts:
    """How the run went: attempts, wall seconds, seconds per phase, output floods, the notebook's deadline."""

    attempts: int
    seconds: float
    timings: Pairs = ()
    flood: bool | None = False
    deadline_hit: bool = False
    busy: float = 1.0
    """The factor the time limits were scaled by because the machine was busy (1.0: as written)."""

    def timed(self, phase: str, seconds: float) -> RunFacts:
        """These facts with one more phase's seconds (a phase already timed keeps its place)."""
        return replace(self, timings=tuple((k, v) for k, v in self.timings if k != phase) + ((phase, seconds),))

    def to_dict(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "seconds": self.seconds, "timings": dict(self.timings),
                "flood": self.flood, "deadline_hit": self.deadline_hit} | ({"busy": self.busy} if self.busy != 1.0 else {})

    @classmethod
    def from_dict(cls, data: Any) -> RunFacts | None:
        if not isinstance(data, Mapping) or not data:
            return None
        busy = data.get("busy")
        return cls(int(data.get("attempts") or 0), float(data.get("seconds") or 0.0), _pairs(data.get("timings")),
                   data.get("flood"), bool(data.get("deadline_hit")),
                   float(busy) if isinstance(busy, (int, float)) and not isinstance(busy, bool) else 1.0)


@dataclass(frozen=True)
class CellFacts:
    """One cell that ran: where, its id, how it ended, its error, its seconds."""

    index: int
    id: str
    status: str
    error: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "status": self.status, "error": self.error,
                "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CellFacts:
        return cls(int(data.get("index", -1)), str(data.get("id", "")), str(data.get("status", "")),
                   str(data.get("error", "")), float(data.get("seconds") or 0.0))


@dataclass(frozen=True)
class Differing:
    """An output the notebook stored that the fresh run did not print (the student's claim, never trusted)."""

    cell_id: str
    text: str
    fresh: str

    def to_dict(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "text": self.text, "fresh": self.fresh}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Differing:
        return cls(str(data.get("cell_id", "")), str(data.get("text", "")), str(data.get("fresh", "")))


@dataclass(frozen=True)
class Explanation:
    """A written answer: the tagged cell, its kind (prediction or explanation), its text, and whether the
    student left the handout's prompt as it was."""

    cell_id: str
    kind: str
    text: str
    untouched: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "kind": self.kind, "text": self.text, "untouched": self.untouched}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Explanation:
        return cls(str(data.get("cell_id", "")), str(data.get("kind", "")), str(data.get("text", "")),
                   bool(data.get("untouched")))


@dataclass(frozen=True)
class Submitted:
    """How a batch received the submission: the layout, the files, the platform's name and late mark, the roster."""

    layout: str
    files: tuple[str, ...] = ()
    name: str = ""
    late: bool = False
    on_roster: bool | None = None
    section: str = ""
    submitted_at: str = ""
    """When the platform says it was submitted (ISO 8601), where its layout records it; else ""."""
    receipt: Pairs = ()
    """The submission service's receipt (id, sha256, received_at), signed with the result: what was submitted and
    when, as the server received it; () outside the service."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"layout": self.layout, "files": list(self.files), "name": self.name,
                                "late": self.late, "on_roster": self.on_roster, "section": self.section}
        return data | ({"submitted_at": self.submitted_at} if self.submitted_at else {}) | (
            {"receipt": dict(self.receipt)} if self.receipt else {})

    @classmethod
    def from_dict(cls, data: Any) -> Submitted | None:
        if not isinstance(data, Mapping):
            return None
        return cls(str(data.get("layout", "")), tuple(str(f) for f in data.get("files") or ()),
                   str(data.get("name") or ""), bool(data.get("late")), data.get("on_roster"),
                   str(data.get("section") or ""), str(data.get("submitted_at") or ""), _pairs(data.get("receipt")))


@dataclass(frozen=True)
class SandboxFacts:
    """The isolation a grade ran under, as it was when it ran (who ran it, which layers held, the limits)."""

    mode: str
    runs_as: str
    kernel_as: str
    rootless: bool
    isolated: bool
    layers: Pairs = ()
    budgets: Pairs = ()
    limits: Pairs = ()
    missing: tuple[str, ...] = ()
    missing_reason: str = ""
    reasons: Pairs = ()
    memory_bound: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "runs_as": self.runs_as, "kernel_as": self.kernel_as, "rootless": self.rootless,
                "isolated": self.isolated, "layers": dict(self.layers), "budgets": dict(self.budgets),
                "limits": dict(self.limits), "missing": list(self.missing), "missing_reason": self.missing_reason,
                "reasons": dict(self.reasons), "memory_bound": self.memory_bound}

    @classmethod
    def from_dict(cls, data: Any) -> SandboxFacts | None:
        if not isinstance(data, Mapping) or not data:
            return None
        return cls(str(data.get("mode", "")), str(data.get("runs_as", "")), str(data.get("kernel_as", "")),
                   bool(data.get("rootless")), bool(data.get("isolated")), _pairs(data.get("layers")),
                   _pairs(data.get("budgets")), _pairs(data.get("limits")),
                   tuple(str(m) for m in data.get("missing") or ()), str(data.get("missing_reason") or ""),
                   _pairs(data.get("reasons")), data.get("memory_bound"))
