"""Judge: compare the kernel's plain answers with the reference, here.

Nothing in this module runs in the student's kernel. Expected answers come
from the figures a lesson states (`expect` in lesson.toml), from the lesson's
public consistency checks, or from the reference namespace computed in the
grader process on the same inputs. Messages name what to fix; a hidden case's
reference answer is never put in a message.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from grader.base import spelling
from grader.base.errors import GraderError, LessonError
from grader.judge.expectations import Expectation, Pending, Refused, Unavailable, Value, asked, expectation, resolved
from grader.judge.matching import compare
from grader.lesson.cases import Accepts, Case, Checks, Holds, Raises, Recompute
from grader.lesson.catalog import Exercise
from grader.run.cells import CellRun, cell_name, readable
from grader.run.decoded import Answer, Raised
from grader.run.probe import Probe

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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExerciseResult:
        """A written verdict read back (the inverse of `to_dict`)."""
        return cls(data["id"], data["status"], data["score"], data["max_score"], data["kind"],
                   tuple(data.get("messages") or ()), tuple(CaseVerdict(**c) for c in data.get("cases") or ()),
                   data.get("scoring", "all"), data.get("public_cases", 0), data.get("hidden_cases", 0))


def grouped(verdicts: list[CaseVerdict]) -> list[str]:
    """One line per distinct problem: the same problem on several cases is said once, with a count and an example."""
    groups: dict[str, list[tuple[CaseVerdict, str]]] = {}
    for verdict in verdicts:
        prefix = f"hidden case {verdict.label}" if verdict.hidden else verdict.label
        detail = verdict.message[len(prefix) + 2:] if verdict.message.startswith(prefix + ": ") else verdict.message
        # one problem, whatever the numbers it shows on each input: a bug's consequences are said once
        groups.setdefault(_NUMBERS.sub("#", _SHOWN.sub("", detail)), []).append((verdict, detail))
    lines = []
    for same in groups.values():
        first, detail = same[0]
        if len(same) == 1:
            lines.append(first.message)
        else:
            example = f"hidden case {first.label}" if first.hidden else first.label
            lines.append(f"{len(same)} cases, e.g. {example}: {detail}")
    return lines


_SHOWN = re.compile(r"\((?:[^()]|\([^()]*\))*in \[[^\]]*\]\)|\[[-+0-9., e]*\]")
"""The values a message shows of an answer (`(2.029 in [ 1.684,  2.029, ...])`, `[1]`), left out of its kind."""
_NUMBERS = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _case_verdict(case: Case, answer: Answer, expect: Expectation,
                  checks: Checks) -> CaseVerdict:
    label = case.label()
    prefix = f"hidden case {label}" if case.hidden else label
    if answer.missing is not None:
        return CaseVerdict(label, case.hidden, "error", f"{prefix}: `{answer.missing}` is not defined")
    raised = answer.raised
    match expect:
        case Raises():
            return _raised(case, raised, prefix)
        case _ if raised:
            return CaseVerdict(label, case.hidden, "error",
                               f"{prefix}: raised {raised.type}: {readable(raised.message)}".rstrip(": "))
        case Accepts():
            return CaseVerdict(label, case.hidden, "passed")
        case Recompute(expression):
            return _recomputed(case, answer, expression, prefix)
        case Refused(why):
            return CaseVerdict(label, case.hidden, "failed",
                               f"{prefix}: your own values it was asked on are not valid input ({why})")
        case Holds(name):
            return _holds(case, answer, name, checks, prefix)
        case Value(value):
            problem = compare(answer.value, value, case)
            if problem is None:
                return CaseVerdict(label, case.hidden, "passed")
            hint = f" ({case.hint})" if case.hint else ""  # the mistake the lesson warns about, where it names one
            return CaseVerdict(label, case.hidden, "failed",
                               f"{prefix}: " + (problem.hidden() if case.hidden else problem.public()) + hint)
        case Pending() | Unavailable():
            raise LessonError(f"no expectation for {label}")
    raise AssertionError(f"an expectation of no known kind: {expect!r}")


def _raised(case: Case, raised: Raised | None, prefix: str) -> CaseVerdict:
    """A case that must raise ValueError (or a subclass)."""
    label = case.label()
    if raised and raised.value_error:
        return CaseVerdict(label, case.hidden, "passed")
    if raised:
        return CaseVerdict(label, case.hidden, "failed",
                           f"{prefix}: raised {raised.type}, but the contract requires ValueError (or a subclass)")
    return CaseVerdict(label, case.hidden, "failed", f"{prefix}: returned normally; this input is invalid and must raise ValueError")


def _holds(case: Case, answer: Answer, name: str, checks: Checks,
           prefix: str) -> CaseVerdict:
    """A case judged by the lesson's consistency check of this name."""
    check = checks.get(name)
    if check is None:
        raise LessonError(f"the lesson names an unknown consistency check '{name}'")
    problems = check(asked(case), answer.value)
    if problems:
        return CaseVerdict(case.label(), case.hidden, "failed", f"{prefix}: " + "; ".join(problems[:3]))
    return CaseVerdict(case.label(), case.hidden, "passed")


def _recomputed(case: Case, answer: Answer, expression: str, prefix: str) -> CaseVerdict:
    """A value checked against the student's own functions: it must equal what `expression` gives in their kernel."""
    label = case.label()
    own = answer.own
    if own is None or own.raised is not None:
        raised = (f"{own.raised.type}: {readable(own.raised.message)}".rstrip(": ") if own and own.raised
                  else "nothing")
        return CaseVerdict(label, case.hidden, "failed",
                           f"{prefix}: recomputing it from your own functions raised {raised} ({expression})")
    problem = compare(answer.value, own.value, case)
    if problem is None:
        return CaseVerdict(label, case.hidden, "passed")
    return CaseVerdict(label, case.hidden, "failed",
                       f"{prefix}: is not what your own functions give ({expression}): {problem.public()}")


def _unanswerable(cases: list[Case], answers: tuple[Answer, ...], expectations: list[Expectation],
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
    for index, (case, answer, expect) in enumerate(zip(cases, answers, expectations)):
        own_raised = bool(answer.own and answer.own.raised and answer.own.raised.value_error)
        no_answer = (isinstance(expect, Raises) and expect.type == "ValueError") or (
            isinstance(expect, Recompute) and own_raised)
        if case.mode != "value" or answer.missing != case.name or not no_answer:
            continue
        raised = [c for c in cells if c.status == "error" and c.ename == "ValueError"
                  and case.name in notebook.cells[c.index].source]
        if raised:
            whose = "your own functions raise" if isinstance(expect, Recompute) else "the reference raises"
            excused[index] = (f"{case.label()}: not compared on this run: {whose} ValueError on those "
                              f"values of yours too, as {cell_name(notebook, raised[0].index)} did (regrade to compare it)")
    return excused


def _blocked(exercise: Exercise, probe: Probe, cells: tuple[CellRun, ...], notebook: Any,
             excused: frozenset[str] = frozenset()) -> tuple[str, list[str]] | None:
    """Status and messages when the exercise cannot be judged case by case (`excused` names may be undefined)."""
    if probe.status == "timeout":
        return "timeout", [f"checking `{exercise.id}` ran past its time limit ({probe.detail or 'timed out'}); "
                           "look for a loop that never ends"]
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
        one = len(undefined) == 1
        return "missing", [f"{names} {'is' if one else 'are'} not defined: define {'it' if one else 'them'} "
                           "at top level in the answer cell"]
    suspects = [c for c in bad if any(n in notebook.cells[c.index].source for n in undefined)] or bad
    culprit = suspects[0]
    if any(c.status == "timeout" for c in suspects):
        culprit = next(c for c in suspects if c.status == "timeout")
        how = f" ({culprit.evalue})" if culprit.evalue else ""  # "interrupted after 5 s": the limit it had
        return "timeout", [f"{names} undefined after {cell_name(notebook, culprit.index)} ran past its time limit{how}"]
    if culprit.status == "dropped":
        return "error", [f"{names} undefined: {cell_name(notebook, culprit.index)} was "
                         f"{culprit.evalue or 'left out: it stopped the kernel'}"]
    what = f"{culprit.ename}: {culprit.evalue}".strip(": ")
    return "error", [f"{names} undefined after {cell_name(notebook, culprit.index)} raised {what}"]


@dataclass(frozen=True)
class Judged:
    """A submission judged, outside the kernel: each exercise's verdict, the notes on the notebook as a whole, and
    how long judging took."""

    verdicts: tuple[ExerciseResult, ...]
    notes: tuple[str, ...]
    seconds: float


def judge_lesson(exercises: tuple[Exercise, ...], owned: dict[str, tuple[list[Case], Any]], probes: dict[str, Probe],
                 public: dict[tuple[str, int], Expectation], reference: Any, cells: tuple[CellRun, ...], notebook: Any,
                 checks: Checks) -> list[ExerciseResult]:
    """Every exercise judged, in the lesson's order. A case's expectation is the student's own figures where the
    course gave them numbers (`owned`: each exercise's cases and those figures), else the lesson's public one (asked
    once per batch: `public`), else the reference's answer; it is resolved against what the student answered."""
    verdicts = []
    for ex in exercises:
        found, (cases, own) = probes[ex.id], owned[ex.id]
        expects = [expectation(case, own) if own is not None and case.varies and not case.hidden
                   else public[(ex.id, i)] if (ex.id, i) in public and not case.hidden
                   else expectation(case, reference) for i, case in enumerate(cases)]
        if found.status == "ok":
            pairs = [resolved(c, r, e, reference) for c, r, e in zip(cases, found.results, expects)]
            cases, expects = [c for c, _ in pairs], [e for _, e in pairs]
        verdicts.append(judge(ex, cases, found, expects, cells, notebook, checks))
    return verdicts


def judge(exercise: Exercise, cases: list[Case], probe: Probe, expectations: list[Expectation],
          cells: tuple[CellRun, ...], notebook: Any,
          checks: Checks) -> ExerciseResult:
    """Judge one exercise from its probe and the expectations for its cases.

    Everything judged here came from the student's kernel. A value that makes
    a comparison or a consistency check fail to run (a number too large for a
    float, say) is that student's `error` on this exercise, never a fault of
    the grader; a fault of the lesson itself (`LessonError`) still propagates.
    """
    hidden = sum(1 for case in cases if case.hidden)
    public = len(cases) - hidden
    try:
        return dataclasses.replace(_judge(exercise, cases, probe, expectations, cells, notebook, checks),
                                   public_cases=public, hidden_cases=hidden)
    except GraderError:
        raise
    except Exception as err:
        import traceback

        checked = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.endswith("properties.py")]
        where = f" in the lesson's check {checked[-1].name} ({checked[-1].filename}, line {checked[-1].lineno})" \
            if checked else ""
        reason = f"{type(err).__name__}: {str(err)[:160]}{where}"[:400]
        return ExerciseResult(exercise.id, "error", 0.0, exercise.points, exercise.kind,
                              (f"your answer for `{exercise.id}` could not be judged ({reason}); "
                               "return plain numbers, lists or arrays of the expected sizes",), scoring=exercise.scoring,
                              public_cases=public, hidden_cases=hidden)


def _judge(exercise: Exercise, cases: list[Case], probe: Probe, expectations: list[Expectation],
           cells: tuple[CellRun, ...], notebook: Any,
           checks: Checks) -> ExerciseResult:
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
        messages.insert(0, f"{_share(verdicts)} (scored by cases: {spelling.score(score)} of {spelling.score(exercise.points)} points)")
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
    if len(public) == len(counted):
        return f"{passed} of {len(counted)} cases passed"
    return (f"{passed} of {len(counted)} cases passed ({sum(v.outcome == 'passed' for v in public)} of {len(public)} "
            f"public, {passed - sum(v.outcome == 'passed' for v in public)} of {len(counted) - len(public)} hidden)")


def _passed_line(cases: list[Case], excused: dict[int, str]) -> str:
    public = sum(1 for c in cases if not c.hidden)
    if excused:
        return (f"{len(cases) - len(excused)} of {len(cases)} cases passed ({public} public, "
                f"{len(cases) - public} hidden); {len(excused)} could not be compared on this run")
    if len(cases) == 1:
        return "the case passed"
    if public == len(cases):  # a self-check, or a lesson without hidden cases: no "0 hidden"
        return f"all {len(cases)} cases passed"
    return f"all {len(cases)} cases passed ({public} public, {len(cases) - public} hidden)"
