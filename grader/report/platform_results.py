"""A result in a grading platform's own results format: Gradescope's autograder results and PrairieLearn's
external-grader results, with the same per-test points (each exercise as a test of its public checks and, where
it has hidden cases, a test of those, their scores summing to the exercise's).

A typed result in (read from its JSON at the file edge), the platform's JSON out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.base import spelling
from grader.intake import layouts
from grader.judge.verdict import ExerciseResult
from grader.result.parts import SandboxFacts
from grader.result.record import GradeResult


@dataclass(frozen=True)
class PlatformTest:
    """One test a grading platform shows: an exercise's public checks, or its hidden cases."""

    name: str
    score: float
    max_score: float
    passed: bool
    hidden: bool
    output: str


def _platform_tests(exercise: ExerciseResult) -> list[PlatformTest]:
    """An exercise as a platform's tests: its public checks (visible at once) and, where it has any, its hidden
    cases (after the due date), their scores summing to the exercise's.

    All or nothing: the points sit on the hidden test (on the public one where there are no hidden cases) and are
    earned only when every case passes. Scored by cases: each test carries the points times its share of the
    counted cases, and earns the points times its passed cases over all counted cases; excused cases count in
    neither.
    """
    cases = exercise.cases
    public = [c for c in cases if not c.hidden]
    hidden = [c for c in cases if c.hidden]
    blocked = not cases and exercise.status != "passed"
    shared = list(exercise.messages) if blocked else []
    public_bad = shared or [c.message for c in public if c.outcome not in ("passed", "excused")]
    hidden_bad = shared or [c.message for c in hidden if c.outcome not in ("passed", "excused")]
    has_hidden = bool(hidden) or exercise.hidden_cases > 0
    kind, points, score = exercise.kind, float(exercise.max_score), float(exercise.score)
    if exercise.scoring == "cases" and not blocked:
        counted = [c for c in cases if c.outcome != "excused"]
        public_counted = [c for c in public if c.outcome != "excused"]
        public_max = points * len(public_counted) / len(counted) if counted and has_hidden else points
        public_score = (points * sum(c.outcome == "passed" for c in public_counted) / len(counted)
                        if counted and has_hidden else score)
        shares = ((public_score, public_max), (score - public_score, points - public_max))
    elif has_hidden:
        shares = ((0.0, 0.0), (score, points))
    else:
        shares = ((score, points), (0.0, 0.0))
    tests = [PlatformTest(f"{exercise.id}: public checks ({kind})", shares[0][0], shares[0][1], not public_bad,
                          False, "\n".join(public_bad) or "every public case passed")]
    if has_hidden:
        hidden_ok = not hidden_bad and exercise.status == "passed"
        if exercise.scoring != "cases" and not hidden_bad and not hidden_ok:
            hidden_bad = ["the public checks must pass first"]
        tests.append(PlatformTest(f"{exercise.id}: hidden cases ({kind})", shares[1][0], shares[1][1],
                                  not hidden_bad, True, "\n".join(hidden_bad) or "every hidden case passed"))
    return tests


def gradescope_results(result: GradeResult, seconds: float = 0.0) -> dict[str, Any]:
    """A result in Gradescope's autograder results format."""
    if result.status != "graded":
        why = layouts.printable(str(result.error))  # one line: a name cannot forge PASS lines or markup
        return {"score": 0.0, "execution_time": round(seconds), "output": f"Not graded: {why}",
                "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
    tests, public = [], []
    for exercise in result.exercises:
        for test in _platform_tests(exercise):
            tests.append({"name": test.name, "score": test.score, "max_score": test.max_score,
                          "status": "passed" if test.passed else "failed",
                          "visibility": "after_due_date" if test.hidden else "visible", "output": test.output})
            if not test.hidden:
                lines = "".join(f"\n    {m}" for m in test.output.splitlines()) if not test.passed else ""
                public.append(f"{'PASS' if test.passed else 'FAIL'} {exercise.id}{lines}")
    # Visible now: the public checks only. The score and the hidden tests wait for the due date.
    return {"score": float(result.score), "execution_time": round(seconds),
            "output": "Public checks (everything else is graded and shown after the due date):\n" + "\n".join(public)
                      + isolation_text(result.sandbox),
            "output_format": "text", "test_output_format": "text",
            "visibility": "after_due_date", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"student": result.student, "seed": result.seed, "seed_from": result.seed_from,
                           "release": result.release.to_dict() if result.release else None}}


def isolation_text(box: SandboxFacts | None) -> str:
    """What held around the kernel, for the instructor: the mode, whom it ran as, and each layer that did not."""
    if box is None:
        return ""
    text = f"\n\nIsolation: sandbox {box.mode}, the kernel ran as {box.kernel_as}"
    if box.kernel_as == "root":
        text += " (without isolation: GRADER_ALLOW_ROOT_KERNEL=1 allowed it)"
    reasons = dict(box.reasons)
    for layer in box.missing:
        text += f"\n  not held: {layer}: {reasons.get(layer) or box.missing_reason or ''}"
    return text


def prairielearn_results(result: GradeResult) -> dict[str, Any]:
    """A result in PrairieLearn's external-grader format: the same per-test points as Gradescope's."""
    if result.status != "graded":
        return {"gradable": False, "score": 0.0, "message": f"Not graded: {result.error}", "tests": []}
    tests = [{"name": test.name, "points": test.score, "max_points": test.max_score,
              "message": test.output[:2000], "output": "passed" if test.passed else "failed"}
             for exercise in result.exercises for test in _platform_tests(exercise)]
    tests += _instructors_tests(result)
    total = float(result.max_score or 0)
    return {"gradable": True, "score": float(result.score) / total if total else 0.0,
            "message": f"{spelling.score(result.score)} / {spelling.score(total)}", "tests": tests}


def _instructors_tests(result: GradeResult) -> list[dict[str, Any]]:
    """The instructor's part as tests of their own, so that the tests add up to the score and its maximum: each
    written question (its points, or 0 of them until graded), each override (what it moved), the late penalty."""
    part = result.manual
    if part is None:
        return []
    tests = []
    for w in part.written:
        graded = w.points is not None
        tests.append({"name": f"written: {w.question}", "points": float(w.points or 0.0),
                      "max_points": float(w.max_points or 0.0),
                      "message": "graded by rubric" if graded else "not graded yet",
                      "output": "graded" if graded else "not graded yet"})
    for o in part.overrides:
        tests.append({"name": f"override: {o.exercise}", "points": float(o.score) - float(o.autograded),
                      "max_points": 0.0, "message": o.reason[:2000], "output": "overridden"})
    if part.late is not None and part.late.points:
        tests.append({"name": "late penalty", "points": -float(part.late.points), "max_points": 0.0,
                      "message": f"{part.late.days} day(s) late: -{part.late.percent}%", "output": "late"})
    return tests
