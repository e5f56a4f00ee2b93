"""The result: one graded (or rejected) submission as a typed record, its JSON (schema 1), and reading it back.

A result's parts are records of their own (parts.py); `to_dict` is the only
place the record becomes the contract's JSON, and `read_result` the only place
JSON becomes a record again. Results are written atomically (temporary file,
then rename); the gradebook they go into is gradebook.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.base import files
from grader.judge.verdict import ExerciseResult
from grader.lesson.releases import Release
from grader.result.manual import Manual
from grader.result.parts import CellFacts, Differing, Explanation, RunFacts, SandboxFacts, Section, Submitted

SCHEMA = 1
INTERNAL_ERROR = "internal grader error"
"""How a `rejected` result that is the grader's fault (not the student's) begins its reason.

The gradebook keeps such a row so the class list stays complete, but a rerun
grades that submission again and replaces the row: it was never a grade.
"""


@dataclass(frozen=True)
class GradeResult:
    """One graded (or rejected) submission, typed until it is written; `to_dict()` is the contract's JSON."""

    status: str
    """`graded` or `rejected`."""
    lesson: str | None
    """Lesson id."""
    student: str
    """Student id."""
    score: float = 0.0
    """Points earned."""
    max_score: float = 0.0
    """Points available."""
    exercises: tuple[ExerciseResult, ...] = ()
    """Per-exercise verdicts."""
    error: str | None = None
    """One-line reason when rejected."""
    measured: Section | None = None
    """Timings taken while grading, with how they were taken; never graded on speed."""
    simulated: Section | None = None
    """The student's deterministic answers on the public inputs, checked exactly."""
    environment: dict[str, Any] = field(default_factory=dict)
    """Host, versions, time and concurrency of this grade: the one open mapping (its keys are what the host and
    the kernel report)."""
    sandbox: SandboxFacts | None = None
    """Isolation layers in force."""
    mode: str = "grade"
    """`grade` (hidden cases drawn) or `check` (the public ones only)."""
    seed: int | None = None
    """The seed that drew the hidden cases (None for a self-check)."""
    seed_from: str = ""
    """Where the seed came from: `given` (--seed, a regrade's recorded one), `course secret` (derived from the
    secret, the lesson and the student), `lesson and student` (derived without a secret), or "" (a self-check)."""
    hash_seed: int | None = None
    """The kernel's PYTHONHASHSEED."""
    digest: str | None = None
    """SHA-256 of the submitted file (or files)."""
    submission: str = ""
    """The submitted file's name."""
    graded_at: str | None = None
    """When it was graded (UTC, ISO 8601)."""
    notes: tuple[str, ...] = ()
    """What the grader noticed about the notebook as a whole."""
    run: RunFacts | None = None
    """Attempts, seconds, per-phase timings, floods and deadline of the run."""
    cells: tuple[CellFacts, ...] = ()
    """Each cell that ran: index, id, status, error and seconds."""
    stored_outputs: int = 0
    """How many outputs the submitted notebook stored."""
    as_submitted: tuple[Differing, ...] = ()
    """Stored outputs that differ from the fresh run's (the student's claim, never trusted)."""
    explanations: tuple[Explanation, ...] = ()
    """The student's written answers."""
    numbers: tuple[tuple[str, float], ...] = ()
    """The student's own numbers where the course grades the lesson per student (variants.py), else ()."""
    release: Release | None = None
    """Which release of the lesson the notebook came from and which one graded it (releases.py)."""
    manual: Manual | None = None
    """The instructor's part: written answers by rubric, overrides, the late penalty (manual.py); None when the
    lesson has none of them and nobody overrode anything."""
    handout_of: str | None = None
    """Whose per-student handout the notebook is, by its owner mark, where that is another student than the one
    graded: for the instructor's views (dashboard, summary, similarity), never a student's report."""
    submitted_as: Submitted | None = None
    """How a batch received it (layout, files, name, late, roster match); None outside a batch."""
    notebook: Any = field(default=None, compare=False, repr=False)
    """The freshly executed notebook (not part of the JSON; kept for portfolios)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the contract's field order (a rejected result carries no run)."""
        data: dict[str, Any] = {
            "schema": SCHEMA, "status": self.status, "error": self.error, "lesson": self.lesson,
            "student": self.student, "score": self.score, "max_score": self.max_score,
            "exercises": [e.to_dict() for e in self.exercises], "measured": _part(self.measured),
            "simulated": _part(self.simulated), "environment": self.environment, "sandbox": _part(self.sandbox),
        }
        if self.status == "graded":
            data.update(mode=self.mode, seed=self.seed, seed_from=self.seed_from, hash_seed=self.hash_seed, digest=self.digest,
                        submission=self.submission, graded_at=self.graded_at, notes=list(self.notes), run=_part(self.run),
                        cells=[c.to_dict() for c in self.cells], stored_outputs=self.stored_outputs,
                        as_submitted=[d.to_dict() for d in self.as_submitted],
                        explanations=[e.to_dict() for e in self.explanations],
                        release=self.release.to_dict() if self.release else None,
                        numbers=dict(self.numbers) or None)
            if self.handout_of is not None:
                data["handout_of"] = self.handout_of
        else:
            data.update(submission=self.submission, graded_at=self.graded_at)
            if self.digest is not None:
                data["digest"] = self.digest
        if self.manual is not None and self.status == "graded":
            data["manual"] = self.manual.to_dict()
        if self.submitted_as is not None:
            data["submitted_as"] = self.submitted_as.to_dict()
        return data


def _part(part: Any) -> dict[str, Any]:
    return part.to_dict() if part is not None else {}


def read_result(data: dict[str, Any]) -> GradeResult:
    """A written result read back into a typed record (receipt fields and unknown keys are left out):
    `read_result(r.to_dict()) == r` for every result the grader makes."""
    def each(kind: Any, key: str) -> tuple[Any, ...]:
        return tuple(kind.from_dict(item) for item in data.get(key) or () if isinstance(item, dict))

    plain = {"status", "lesson", "student", "score", "max_score", "error", "mode", "seed", "seed_from", "hash_seed",
             "digest", "submission", "graded_at", "stored_outputs", "handout_of"}
    return GradeResult(
        **{k: data[k] for k in plain if k in data}, exercises=each(ExerciseResult, "exercises"),
        measured=Section.from_dict(data.get("measured")), simulated=Section.from_dict(data.get("simulated")),
        environment=dict(data.get("environment") or {}), sandbox=SandboxFacts.from_dict(data.get("sandbox")),
        notes=tuple(data.get("notes") or ()), run=RunFacts.from_dict(data.get("run")), cells=each(CellFacts, "cells"),
        as_submitted=each(Differing, "as_submitted"), explanations=each(Explanation, "explanations"),
        numbers=tuple(sorted((data.get("numbers") or {}).items())),
        release=Release.from_dict(data["release"]) if data.get("release") else None,
        manual=Manual.from_dict(data.get("manual")), submitted_as=Submitted.from_dict(data.get("submitted_as")))


def dumps(data: dict[str, Any]) -> str:
    """The result as JSON text (NaN kept as the student produced it)."""
    return json.dumps(data, indent=2, sort_keys=False, allow_nan=True, default=str) + "\n"


def write_json(data: dict[str, Any], path: str | Path) -> None:
    """Write one result JSON atomically."""
    files.write_text(path, dumps(data))
