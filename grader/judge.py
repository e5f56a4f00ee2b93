"""Step 4, judge: compare the kernel's plain answers with the reference, here.

Nothing in this module runs in the student's kernel. Expected answers come
from the figures a lesson states (`expect` in lesson.toml), from the lesson's
public consistency checks, or from the reference namespace computed in the
grader process on the same inputs. Messages name what to fix; a hidden case's
reference answer is never put in a message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable


from grader import wire
from grader.errors import GraderError, LessonError
from grader.lessons import Case, Exercise
from grader.probe import Probe
from grader.cells import CellRun, cell_name, readable
from grader.matching import compare, plain

STATUSES = ("passed", "failed", "error", "missing", "timeout")


@dataclass(frozen=True)
class CaseVerdict:
    """How one case was judged (for reports; hidden answers are not kept)."""

    label: str
    """The call or name, as feedback shows it."""
    hidden: bool
    """Drawn at grading time."""
    outcome: str
    """`passed`, `failed`, `error`, or `excused` (no one could answer it on this run; counted in no score)."""
    message: str = ""
    """What differed, if anything."""


@dataclass(frozen=True)
class ExerciseResult:
    """The verdict on one exercise (the contract's `exercises[]` entry)."""

    id: str
    """Exercise id."""
    status: str
    """One of STATUSES."""
    score: float
    """Points earned: all or nothing, or by the share of cases passed (`scoring`)."""
    max_score: float
    """Points available."""
    kind: str
    """`simulated` or `measured`."""
    messages: tuple[str, ...] = ()
    """Feedback lines, most useful first."""
    cases: tuple[CaseVerdict, ...] = field(default=())
    """Per-case verdicts."""
    scoring: str = "all"
    """How `score` was reached: `all` (all or nothing) or `cases` (by the share of cases passed)."""
    public_cases: int = 0
    """How many public cases the exercise has (also when it could not be judged case by case)."""
    hidden_cases: int = 0
    """How many hidden cases were drawn for it on this run."""

    def to_dict(self) -> dict[str, Any]:
        """The contract's JSON form, plus how it was scored and per-case verdicts."""
        return {"id": self.id, "status": self.status, "score": self.score, "max_score": self.max_score,
                "kind": self.kind, "scoring": self.scoring, "public_cases": self.public_cases,
                "hidden_cases": self.hidden_cases, "messages": list(self.messages),
                "cases": [{"label": c.label, "hidden": c.hidden, "outcome": c.outcome, "message": c.message}
                          for c in self.cases]}


def expectation(case: Case, reference: dict[str, Any] | None) -> dict[str, Any]:
    """What a correct answer is: stated, a property, or the reference's answer on the same input."""
    if case.recompute:
        return {"recompute": case.recompute}  # answered in the kernel by the student's own functions
    if case.kernel_names():
        return {"pending": case.kernel_names()}  # asked again once the kernel says what those values were
    if case.raises:
        return {"raises": case.raises}
    if case.property:
        return {"property": case.property}
    if case.accepts:
        return {"accepts": True}
    if case.has_expect:
        return {"value": case.expect}
    if reference is None:
        return {"unavailable": True}
    try:
        value = _reference_answer(case, reference)
    except Exception as exc:  # a reference that raises is a lesson bug: say so loudly
        raise RuntimeError(f"reference failed on {case.label()}: {type(exc).__name__}: {exc}") from exc
    return {"value": plain(wire.encode(value))}


def _reference_answer(case: Case, reference: dict[str, Any]) -> Any:
    target = reference[case.reference or case.name]
    if case.mode == "value" and not case.reference:
        return target
    return target(*wire.decode(list(case.args)), **wire.decode(case.kwargs))


def resolved(case: Case, result: dict[str, Any], expect: dict[str, Any],
             reference: dict[str, Any] | None) -> tuple[Case, dict[str, Any]]:
    """A case asked on the student's own values, now with those values as its arguments, and its expectation.

    The reference is asked on exactly what the student's code was given. Where
    the reference refuses those values, the student's data is at fault: a
    ValueError means the contract wants one too; anything else fails the case.
    """
    if "pending" not in expect:
        return case, expect
    if "args" not in result:  # a missing name or a raise is judged as such; an answer without its inputs fails
        return case, {"refused": "the answer came back without the values it was asked on"} if "value" in result \
            else {"accepts": True}
    case = dataclasses.replace(case, args=tuple(result["args"]), shown=case.label())
    try:
        return case, expectation(case, reference)
    except RuntimeError as exc:  # the reference refused the student's values
        cause = exc.__cause__
        if isinstance(cause, ValueError):
            return case, {"raises": "ValueError"}
        return case, {"refused": f"{type(cause).__name__}: {str(cause)[:120]}"}


def grouped(verdicts: list[CaseVerdict]) -> list[str]:
    """One line per distinct problem: the same problem on several cases is said once, with a count and an example."""
    groups: dict[str, list[CaseVerdict]] = {}
    for verdict in verdicts:
        prefix = f"hidden case {verdict.label}" if verdict.hidden else verdict.label
        detail = verdict.message[len(prefix) + 2:] if verdict.message.startswith(prefix + ": ") else verdict.message
        groups.setdefault(detail, []).append(verdict)
    lines = []
    for detail, same in groups.items():
        if len(same) == 1:
            lines.append(same[0].message)
        else:
            first = same[0]
            example = f"hidden case {first.label}" if first.hidden else first.label
            lines.append(f"{len(same)} cases, e.g. {example}: {detail}")
    return lines


def _case_verdict(case: Case, result: dict[str, Any], expect: dict[str, Any],
                  checks: dict[str, Callable[[Case, Any], list[str]]]) -> CaseVerdict:
    label = case.label()
    prefix = f"hidden case {label}" if case.hidden else label
    if "missing" in result:
        return CaseVerdict(label, case.hidden, "error", f"{prefix}: `{result['missing']}` is not defined")
    raised = result.get("raised")
    if "raises" in expect:
        if raised and raised.get("value_error"):
            return CaseVerdict(label, case.hidden, "passed")
        if raised:
            return CaseVerdict(label, case.hidden, "failed",
                               f"{prefix}: raised {raised.get('type')}, but the contract requires ValueError (or a subclass)")
        return CaseVerdict(label, case.hidden, "failed", f"{prefix}: returned normally; this input is invalid and must raise ValueError")
    if raised:
        return CaseVerdict(label, case.hidden, "error",
                           f"{prefix}: raised {raised.get('type')}: {readable(str(raised.get('message', '')))}".rstrip(": "))
    if "accepts" in expect:
        return CaseVerdict(label, case.hidden, "passed")
    if "recompute" in expect:
        return _recomputed(case, result, expect["recompute"], prefix)
    if "refused" in expect:
        return CaseVerdict(label, case.hidden, "failed",
                           f"{prefix}: your own values it was asked on are not valid input ({expect['refused']})")
    actual = plain(result.get("value"))
    if "property" in expect:
        check = checks.get(expect["property"])
        if check is None:
            raise LessonError(f"the lesson names an unknown consistency check '{expect['property']}'")
        problems = check(case, actual)
        if problems:
            return CaseVerdict(label, case.hidden, "failed", f"{prefix}: " + "; ".join(problems[:3]))
        return CaseVerdict(label, case.hidden, "passed")
    if "unavailable" in expect:
        raise LessonError(f"no expectation for {label}")
    problem = compare(actual, plain(expect["value"]), case)
    if problem is None:
        return CaseVerdict(label, case.hidden, "passed")
    return CaseVerdict(label, case.hidden, "failed", f"{prefix}: " + (problem.hidden() if case.hidden else problem.public()))


def _recomputed(case: Case, result: dict[str, Any], expression: str, prefix: str) -> CaseVerdict:
    """A value checked against the student's own functions: it must equal what `expression` gives in their kernel."""
    label = case.label()
    own = result.get("own") if isinstance(result.get("own"), dict) else {}
    if "value" not in own:
        raised = (own.get("raised") or {}).get("type", "nothing")
        return CaseVerdict(label, case.hidden, "failed",
                           f"{prefix}: recomputing it from your own functions raised {raised} ({expression})")
    problem = compare(plain(result.get("value")), plain(own["value"]), case)
    if problem is None:
        return CaseVerdict(label, case.hidden, "passed")
    return CaseVerdict(label, case.hidden, "failed",
                       f"{prefix}: is not what your own functions give ({expression}): {problem.public()}")


def _unanswerable(cases: list[Case], results: tuple[dict[str, Any], ...], expectations: list[dict[str, Any]],
                  cells: tuple[CellRun, ...], notebook: Any) -> dict[int, str]:
    """Value cases that no one could answer on this run, by index, with why.

    A value computed from the student's own values (a fit of their live
    records, say) may have no answer: the reference raises ValueError on those
    very values, and the student's cell that defines it raised ValueError too,
    so the name is undefined. That is the contract's answer, not a fault: a
    busy host can hand both the same degenerate measurements. A consistency
    check (`recompute`) is excused alike when the student's own functions
    raise ValueError recomputing the value their cell raised it for.
    """
    excused = {}
    for index, (case, result, expect) in enumerate(zip(cases, results, expectations)):
        own_raised = ((result.get("own") or {}).get("raised") or {}).get("value_error") is True
        no_answer = expect.get("raises") == "ValueError" or ("recompute" in expect and own_raised)
        if case.mode != "value" or result.get("missing") != case.name or not no_answer:
            continue
        raised = [c for c in cells if c.status == "error" and c.ename == "ValueError"
                  and case.name in notebook.cells[c.index].source]
        if raised:
            whose = "your own functions raise" if "recompute" in expect else "the reference raises"
            excused[index] = (f"{case.label()}: not compared on this run: {whose} ValueError on those "
                              f"values of yours too, as {cell_name(notebook, raised[0].index)} did (regrade to compare it)")
    return excused


def _blocked(exercise: Exercise, probe: Probe, cells: tuple[CellRun, ...], notebook: Any,
             excused: frozenset[str] = frozenset()) -> tuple[str, list[str]] | None:
    """Status and messages when the exercise cannot be judged case by case (`excused` names may be undefined)."""
    if probe.status == "timeout":
        return "timeout", [f"checking `{exercise.id}` ran past its time limit ({probe.detail or 'timed out'}); look for a loop that never ends"]
    if probe.status == "skipped":
        return "timeout", [f"`{exercise.id}` was not checked: {probe.detail or 'the notebook ran out of time'}"]
    if probe.status == "died":
        return "error", [f"the kernel died while checking `{exercise.id}` (os._exit, a crash or a resource limit in your code)"]
    if probe.status != "ok":
        return "error", [f"`{exercise.id}` could not be checked: {probe.detail}"]
    undefined = [name for name in exercise.needs if not probe.defined.get(name, False) and name not in excused]
    if not undefined:
        return None
    names = ", ".join(f"`{n}`" for n in undefined)
    bad = [c for c in cells if c.status in ("timeout", "error", "dropped")]
    if not bad:
        return "missing", [f"{names} {'is' if len(undefined) == 1 else 'are'} not defined: define {'it' if len(undefined) == 1 else 'them'} at top level in the answer cell"]
    suspects = [c for c in bad if any(n in notebook.cells[c.index].source for n in undefined)] or bad
    culprit = suspects[0]
    if any(c.status == "timeout" for c in suspects):
        culprit = next(c for c in suspects if c.status == "timeout")
        return "timeout", [f"{names} undefined after {cell_name(notebook, culprit.index)} ran past its time limit"]
    if culprit.status == "dropped":
        return "error", [f"{names} undefined: {cell_name(notebook, culprit.index)} was "
                         f"{culprit.evalue or 'left out: it stopped the kernel'}"]
    what = f"{culprit.ename}: {culprit.evalue}".strip(": ")
    return "error", [f"{names} undefined after {cell_name(notebook, culprit.index)} raised {what}"]


def judge(exercise: Exercise, cases: list[Case], probe: Probe, expectations: list[dict[str, Any]],
          cells: tuple[CellRun, ...], notebook: Any,
          checks: dict[str, Callable[[Case, Any], list[str]]]) -> ExerciseResult:
    """Judge one exercise from its probe and the expectations for its cases.

    Everything judged here came from the student's kernel. A value that makes
    a comparison or a consistency check fail to run (a number too large for a
    float, say) is that student's `error` on this exercise, never a fault of
    the grader; a fault of the lesson itself (`LessonError`) still propagates.
    """
    hidden = sum(1 for case in cases if case.hidden)
    counts = {"public_cases": len(cases) - hidden, "hidden_cases": hidden}
    try:
        return dataclasses.replace(_judge(exercise, cases, probe, expectations, cells, notebook, checks), **counts)
    except GraderError:
        raise
    except Exception as err:  # noqa: BLE001 - student data only; see the docstring
        reason = f"{type(err).__name__}: {err}"[:200]
        return ExerciseResult(exercise.id, "error", 0.0, exercise.points, exercise.kind,
                              (f"your answer for `{exercise.id}` could not be judged ({reason}); "
                               "return plain numbers, lists or arrays of the expected sizes",), scoring=exercise.scoring,
                              **counts)


def _judge(exercise: Exercise, cases: list[Case], probe: Probe, expectations: list[dict[str, Any]],
           cells: tuple[CellRun, ...], notebook: Any,
           checks: dict[str, Callable[[Case, Any], list[str]]]) -> ExerciseResult:
    excused = _unanswerable(cases, probe.results, expectations, cells, notebook) if probe.status == "ok" else {}
    blocked = _blocked(exercise, probe, cells, notebook, frozenset(cases[i].name for i in excused))
    if blocked:
        status, messages = blocked
        return ExerciseResult(exercise.id, status, 0.0, exercise.points, exercise.kind, tuple(messages),
                              scoring=exercise.scoring)
    verdicts = [CaseVerdict(case.label(), case.hidden, "excused", ("hidden case " if case.hidden else "") + excused[i])
                if i in excused
                else _case_verdict(case, result, expect, checks)
                for i, (case, result, expect) in enumerate(zip(cases, probe.results, expectations))]
    errors = [v for v in verdicts if v.outcome == "error"]
    failures = [v for v in verdicts if v.outcome == "failed"]
    status = "error" if errors else "failed" if failures else "passed"
    score = earned(exercise, verdicts, status)
    messages = grouped(errors + failures)[:8]
    if status == "passed":
        messages = [_passed_line(cases, excused)]
    elif exercise.scoring == "cases":
        messages.insert(0, f"{_share(verdicts)} (scored by cases: {score:.4g} of {exercise.points:g} points)")
    messages += [verdicts[i].message for i in sorted(excused)]
    return ExerciseResult(exercise.id, status, score, exercise.points, exercise.kind, tuple(messages), tuple(verdicts),
                          exercise.scoring)


def earned(exercise: Exercise, verdicts: list[CaseVerdict], status: str) -> float:
    """Points for these verdicts: all or nothing, or (scored by cases) the points times the share of the counted
    cases that passed; excused cases count in neither the share's numerator nor its denominator."""
    if exercise.scoring != "cases":
        return exercise.points if status == "passed" else 0.0
    counted = [v for v in verdicts if v.outcome != "excused"]
    if not counted:
        return exercise.points if status == "passed" else 0.0
    return exercise.points * sum(v.outcome == "passed" for v in counted) / len(counted)


def _share(verdicts: list[CaseVerdict]) -> str:
    counted = [v for v in verdicts if v.outcome != "excused"]
    passed = sum(v.outcome == "passed" for v in counted)
    public = [v for v in counted if not v.hidden]
    return (f"{passed} of {len(counted)} cases passed ({sum(v.outcome == 'passed' for v in public)} of {len(public)} "
            f"public, {passed - sum(v.outcome == 'passed' for v in public)} of {len(counted) - len(public)} hidden)")


def _passed_line(cases: list[Case], excused: dict[int, str]) -> str:
    public = sum(1 for c in cases if not c.hidden)
    if excused:
        return (f"{len(cases) - len(excused)} of {len(cases)} cases passed ({public} public, "
                f"{len(cases) - public} hidden); {len(excused)} could not be compared on this run")
    return f"all {len(cases)} cases passed ({public} public, {len(cases) - public} hidden)"
