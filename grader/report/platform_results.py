"""A result in a grading platform's own results format: Gradescope's autograder results and PrairieLearn's
external-grader results, with the same per-test points (each exercise as a test of its public checks and, where
it has hidden cases, a test of those, their scores summing to the exercise's).

Plain data in (a written result's JSON), plain data out (the platform's JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.base import spelling
from grader.base.shapes import mapping
from grader.intake import layouts


@dataclass(frozen=True)
class PlatformTest:
    """One test a grading platform shows: an exercise's public checks, or its hidden cases."""

    name: str
    score: float
    max_score: float
    passed: bool
    hidden: bool
    output: str


def _platform_tests(exercise: dict[str, Any]) -> list[PlatformTest]:
    """An exercise as a platform's tests: its public checks (visible at once) and, where it has any, its hidden
    cases (after the due date), their scores summing to the exercise's.

    All or nothing: the points sit on the hidden test (on the public one where there are no hidden cases) and are
    earned only when every case passes. Scored by cases: each test carries the points times its share of the
    counted cases, and earns the points times its passed cases over all counted cases; excused cases count in
    neither.
    """
    cases = exercise.get("cases") or []
    public = [c for c in cases if not c.get("hidden")]
    hidden = [c for c in cases if c.get("hidden")]
    blocked = not cases and exercise.get("status") != "passed"
    shared = list(exercise.get("messages") or []) if blocked else []
    public_bad = shared or [c["message"] for c in public if c.get("outcome") not in ("passed", "excused")]
    hidden_bad = shared or [c["message"] for c in hidden if c.get("outcome") not in ("passed", "excused")]
    has_hidden = bool(hidden) or int(exercise.get("hidden_cases") or 0) > 0
    kind, points, score = exercise.get("kind", "simulated"), float(exercise["max_score"]), float(exercise["score"])
    if exercise.get("scoring") == "cases" and not blocked:
        counted = [c for c in cases if c.get("outcome") != "excused"]
        public_counted = [c for c in public if c.get("outcome") != "excused"]
        public_max = points * len(public_counted) / len(counted) if counted and has_hidden else points
        public_score = (points * sum(c.get("outcome") == "passed" for c in public_counted) / len(counted)
                        if counted and has_hidden else score)
        shares = ((public_score, public_max), (score - public_score, points - public_max))
    elif has_hidden:
        shares = ((0.0, 0.0), (score, points))
    else:
        shares = ((score, points), (0.0, 0.0))
    tests = [PlatformTest(f"{exercise['id']}: public checks ({kind})", shares[0][0], shares[0][1], not public_bad,
                          False, "\n".join(public_bad) or "every public case passed")]
    if has_hidden:
        hidden_ok = not hidden_bad and exercise.get("status") == "passed"
        if exercise.get("scoring") != "cases" and not hidden_bad and not hidden_ok:
            hidden_bad = ["the public checks must pass first"]
        tests.append(PlatformTest(f"{exercise['id']}: hidden cases ({kind})", shares[1][0], shares[1][1],
                                  not hidden_bad, True, "\n".join(hidden_bad) or "every hidden case passed"))
    return tests


def gradescope_results(data: dict[str, Any], seconds: float = 0.0) -> dict[str, Any]:
    """A result in Gradescope's autograder results format."""
    if data.get("status") != "graded":
        why = layouts.printable(str(data.get("error")))  # one line: a name cannot forge PASS lines or markup
        return {"score": 0.0, "execution_time": round(seconds), "output": f"Not graded: {why}",
                "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
    tests, public = [], []
    for exercise in data["exercises"]:
        for test in _platform_tests(exercise):
            tests.append({"name": test.name, "score": test.score, "max_score": test.max_score,
                          "status": "passed" if test.passed else "failed",
                          "visibility": "after_due_date" if test.hidden else "visible", "output": test.output})
            if not test.hidden:
                lines = "".join(f"\n    {m}" for m in test.output.splitlines()) if not test.passed else ""
                public.append(f"{'PASS' if test.passed else 'FAIL'} {exercise['id']}{lines}")
    # Visible now: the public checks only. The score and the hidden tests wait for the due date.
    return {"score": float(data.get("score") or 0.0), "execution_time": round(seconds),
            "output": "Public checks (everything else is graded and shown after the due date):\n" + "\n".join(public)
                      + isolation_text(data.get("sandbox") or {}),
            "output_format": "text", "test_output_format": "text",
            "visibility": "after_due_date", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"student": data.get("student"), "seed": data.get("seed"), "seed_from": data.get("seed_from"),
                           "release": data.get("release")}}


def isolation_text(box: dict[str, Any]) -> str:
    """What held around the kernel, for the instructor: the mode, whom it ran as, and each layer that did not."""
    if not box:
        return ""
    text = f"\n\nIsolation: sandbox {box.get('mode')}, the kernel ran as {box.get('kernel_as')}"
    if box.get("kernel_as") == "root":
        text += " (without isolation: GRADER_ALLOW_ROOT_KERNEL=1 allowed it)"
    reasons = box.get("reasons") or {}
    for layer in box.get("missing") or []:
        text += f"\n  not held: {layer}: {reasons.get(layer) or box.get('missing_reason') or ''}"
    return text


def prairielearn_results(data: dict[str, Any]) -> dict[str, Any]:
    """A result in PrairieLearn's external-grader format: the same per-test points as Gradescope's."""
    if data.get("status") != "graded":
        return {"gradable": False, "score": 0.0, "message": f"Not graded: {data.get('error')}", "tests": []}
    tests = [{"name": test.name, "points": test.score, "max_points": test.max_score,
              "message": test.output[:2000], "output": "passed" if test.passed else "failed"}
             for exercise in data["exercises"] for test in _platform_tests(exercise)]
    tests += _instructors_tests(data)
    total = float(data.get("max_score") or 0)
    return {"gradable": True, "score": float(data.get("score") or 0) / total if total else 0.0,
            "message": f"{spelling.score(data.get('score', 0))} / {spelling.score(total)}", "tests": tests}


def _instructors_tests(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The instructor's part as tests of their own, so that the tests add up to the score and its maximum: each
    written question (its points, or 0 of them until graded), each override (what it moved), the late penalty."""
    part = mapping(data, "manual")
    tests = []
    for w in part.get("written") or []:
        if isinstance(w, dict):
            graded = w.get("points") is not None
            tests.append({"name": f"written: {w.get('question')}", "points": float(w.get("points") or 0.0),
                          "max_points": float(w.get("max_points") or 0.0),
                          "message": "graded by rubric" if graded else "not graded yet",
                          "output": "graded" if graded else "not graded yet"})
    for o in part.get("overrides") or []:
        if isinstance(o, dict):
            moved = float(o.get("score") or 0.0) - float(o.get("autograded") or 0.0)
            tests.append({"name": f"override: {o.get('exercise')}", "points": moved, "max_points": 0.0,
                          "message": str(o.get("reason") or "")[:2000], "output": "overridden"})
    late = mapping(part, "late")
    if late.get("points"):
        tests.append({"name": "late penalty", "points": -float(late["points"]), "max_points": 0.0,
                      "message": f"{late.get('days')} day(s) late: -{late.get('percent')}%", "output": "late"})
    return tests
