"""The spine: load -> sandbox/run -> probe -> judge -> record, for one submission."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import host
from grader.base.errors import DeviceUnavailable, GraderError, LessonError, SandboxUnavailable
from grader.base.options import Options
from grader.intake import load
from grader.judge import completion, expectations, verdict
from grader.kernel import compile_cache, devices, isolation, leftovers, managers, sandbox, zygote
from grader.lesson import catalog, draw as drawing, folders, handout, releases, staff_code
from grader.result import joining, parts, variants
from grader.result.record import GradeResult
from grader.result.shown import Shown, evidence_values, public_answers
from grader.run import device_check, execution, probe
from grader.run.cells import SKIPPED


def rejected(path: str | Path, reason: str, lesson: str | None = None, student: str | None = None) -> GradeResult:
    """The result recorded for a submission that cannot be graded."""
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return GradeResult(status="rejected", lesson=lesson, student=student or Path(path).stem, error=reason,
                       submission=Path(path).name, graded_at=now)


PROBES_KEY = "__probes__"
"""The tail cell that probes every exercise, one section each."""


def plans_for(lesson: catalog.Lesson, seed: int, public_only: bool) -> list[probe.ExercisePlan]:
    hidden = {} if public_only else staff_code.hidden_cases(lesson, seed)
    columns = {case.name: case.columns for ex in lesson.exercises for case in ex.cases if case.columns}
    return [probe.ExercisePlan(ex.id, ex.needs, tuple(ex.cases) + tuple(
                dataclasses.replace(case, columns=case.columns or columns.get(case.name, ()))  # names in feedback
                for case in hidden.get(ex.id, [])))
            for ex in lesson.exercises]


def _differing(as_submitted: tuple[load.StoredOutput, ...], executed: Any) -> list[parts.Differing]:
    """Stored outputs that differ from what the fresh run printed (shown as unverified)."""
    fresh = {cell["id"]: "".join(load.output_text(o) for o in cell.get("outputs", [])) for cell in executed.cells
             if cell.cell_type == "code"}
    return [parts.Differing(item.cell_id, item.text, fresh.get(item.cell_id, "")[:load.AS_SUBMITTED_CHARS])
            for item in as_submitted if fresh.get(item.cell_id, "").strip() != item.text.strip()]


@dataclass(frozen=True)
class _Ran:
    """One submission's run, and how it was isolated."""

    executed: execution.Executed
    report: isolation.SandboxReport
    start: devices.KernelStart
    device: str
    checked: device_check.DeviceCheck | None
    fell_back: str
    nonce: str
    evidence_plan: probe.ExercisePlan
    given: frozenset[int]


@dataclass(frozen=True)
class Drawn:
    """A submission as this student's draw makes it: the notebook as it will run (their handout's numbers
    restored, an older release's cells mapped), its lesson, their draw and the cases every exercise asks."""

    submission: load.Submission
    lesson: catalog.Lesson
    release: releases.Release
    draw: drawing.Draw
    notes: tuple[str, ...]
    """Who the notebook is (an owner mark naming another student), numbers held elsewhere."""
    handout_of: str | None
    plans: list[probe.ExercisePlan]

    @property
    def numbers(self) -> dict[str, float] | None:
        return self.draw.own_numbers()

    @property
    def seed(self) -> int:
        return self.draw.seed

    @property
    def seed_from(self) -> str:
        return self.draw.seed_from

    @property
    def hash_seed(self) -> int:
        return self.draw.hash_seed


@dataclass(frozen=True)
class Judged:
    """What was judged, outside the kernel: each exercise's verdict, the notes, and the student's answers shown."""

    verdicts: tuple[verdict.ExerciseResult, ...]
    notes: tuple[str, ...]
    shown: Shown
    values: dict[str, dict[str, Any]]
    seconds: float


def grade(path: str | Path, lesson_id: str | None = None, options: Options = Options(),
          student: str | None = None, chosen: drawing.Draw | drawing.Given = drawing.Given()) -> GradeResult:
    """Grade one submission, one stage after another, on the draw `chosen` (a batch's parent decides each student's
    whole; else what the command line gives, the rest derived here); raises SubmissionRejected or LessonError for
    bad input."""
    drawn = draw(path, lesson_id, options, student, chosen)  # load -> what this student meets
    ran = run_submission(drawn.lesson, drawn.submission, drawn.plans, options, drawn.hash_seed)  # kernel -> run -> probe
    judged = judge_run(drawn, ran, options)  # judge, outside the kernel
    return recorded(drawn, ran, judged, options)  # the result


def draw(path: str | Path, lesson_id: str | None, options: Options, student: str | None,
         chosen: drawing.Draw | drawing.Given = drawing.Given()) -> Drawn:
    """Read the submission and decide, once, what this student meets (their draw, where none was handed over)."""
    submission = load.read(path, student)
    lesson = catalog.get(_lesson_id(lesson_id, submission))
    secret = None if isinstance(chosen, drawing.Draw) else drawing.course_secret()  # none on a student's machine
    key = chosen.handout_key if isinstance(chosen, drawing.Draw) else drawing.handout_key(lesson.id, secret)
    who, handout_of, named = variants.identity(lesson, submission.notebook, student, Path(submission.path).stem, key)
    decided = chosen if isinstance(chosen, drawing.Draw) else drawing.decide(
        lesson, who, chosen, public_only=options.public_only, secret=secret, per_student=drawing.enabled(lesson.id))
    submission = dataclasses.replace(submission, student=who)
    restored, release = releases.restore(lesson, submission.notebook)
    restored, held = variants.own_numbers(lesson, restored, decided.own_numbers(), Path(submission.path).name,
                                          options.public_only)
    submission = dataclasses.replace(submission, notebook=restored)
    notes = tuple(named) + tuple(variants.held_elsewhere(submission.notebook, who, decided.own_numbers(), held))
    return Drawn(submission, lesson, release, decided, notes, handout_of,
                 plans_for(lesson, decided.seed, options.public_only))


def judge_run(drawn: Drawn, ran: _Ran, options: Options) -> Judged:
    """Each exercise judged on what the probes read, the notes on the notebook as a whole, the answers to show."""
    started = time.monotonic()
    lesson, executed, nonce, payload = drawn.lesson, ran.executed, ran.nonce, options.limits.probe_payload_bytes
    probes = {plan.exercise_id: probe.collect(plan, executed.tail.get(plan.exercise_id, SKIPPED), nonce, payload)
              for plan in drawn.plans}
    verdicts = verdicts_of(lesson, drawn.plans, probes, executed, drawn.submission, options, drawn.numbers)
    notes, verdicts = _noted(lesson, drawn.submission, drawn.release, verdicts)
    values = evidence_values(lesson, ran.evidence_plan, probe.collect(
        ran.evidence_plan, executed.tail.get(probe.EVIDENCE_KEY, SKIPPED), nonce, payload))
    return Judged(tuple(verdicts), drawn.notes + tuple(notes), public_answers(lesson, drawn.plans, probes), values,
                  time.monotonic() - started)


def recorded(drawn: Drawn, ran: _Ran, judged: Judged, options: Options) -> GradeResult:
    """The result of a grade: every stage's facts in one typed record, the instructor's part joined."""
    lesson, submission, executed, check = drawn.lesson, drawn.submission, ran.executed, options.public_only
    env, reported = _environment(options, ran)
    how = parts.MeasuredHow("timings depend on the host and the load; they are checked for structure, never for speed",
                            reported.get("jax_matmul_precision"),
                            lesson.report.get("percentile_method", "not stated by the lesson"),
                            lesson.report.get("measured_units", ""), options.jobs_at_once)
    shown, values = judged.shown, judged.values
    return joining.joined(GradeResult(
        status="graded", lesson=lesson.id, student=submission.student,
        score=float(sum(v.score for v in judged.verdicts)), max_score=lesson.max_score, exercises=judged.verdicts,
        measured=parts.Section(tuple(shown["measured"]), tuple(values["measured"].items()), how)
        if shown["measured"] else None,
        simulated=parts.Section(tuple(shown["simulated"]), tuple(values["simulated"].items())),
        environment=env,
        sandbox=parts.SandboxFacts.from_dict(dict(ran.report.to_dict(),
                                                  memory_bound=devices.memory_bound(ran.start.device, options.limits))),
        mode="check" if check else "grade", seed=None if check else drawn.seed,
        seed_from="" if check else drawn.seed_from, hash_seed=drawn.hash_seed,
        digest=submission.digest, submission=Path(submission.path).name,
        graded_at=env["graded_at"], notes=judged.notes + tuple(executed.dropped),
        run=parts.RunFacts(executed.attempts, round(executed.seconds, 3),
                           tuple(_phases(executed, ran.given, judged.seconds).items()),
                           executed.flood, executed.deadline_hit),
        cells=tuple(parts.CellFacts(c.index, c.cell_id, c.status, f"{c.ename}: {c.evalue}".strip(": "),
                                    round(c.seconds, 3)) for c in executed.cells if c.status != "empty"),
        stored_outputs=len(submission.as_submitted),
        as_submitted=tuple(_differing(submission.as_submitted, executed.notebook)),
        release=drawn.release, numbers=tuple(sorted(drawn.numbers.items())) if drawn.numbers else (),
        handout_of=drawn.handout_of,
        explanations=tuple(parts.Explanation(e.cell_id, e.kind, e.text, e.text.strip() in handout.prompt_texts(lesson))
                           for e in submission.explanations),
        notebook=executed.notebook,
    ), lesson)


def run_submission(lesson: catalog.Lesson, submission: load.Submission, plans: list[probe.ExercisePlan], options: Options,
         hash_seed: int) -> _Ran:
    """Plan the isolation and the device, then run the notebook and its probes in a fresh kernel."""
    report = sandbox.plan(options.limits, options.sandbox, options.require_sandbox)
    if report.kernel_as == "root" and options.sandbox != "none":
        raise SandboxUnavailable(f"refusing to run student code as root: {report.missing_reason}")
    device, checked, fell_back = resolve_device(options, report)
    start = devices.KernelStart(hash_seed, device, lesson.warm_imports,
                                compile_cache.existing(lesson, device) if report.mode == "bwrap" else "",
                                handout.warm_sources(lesson))
    leftovers.sweep_stale()
    nonce = probe.new_nonce()
    evidence_plan = probe.ExercisePlan(probe.EVIDENCE_KEY, tuple(lesson.evidence),
                                       tuple(catalog.case_from_spec({"value": name}) for name in lesson.evidence))
    probed = plans + ([evidence_plan] if lesson.evidence else [])
    tail: list[tuple[str, Any]] = [(PROBES_KEY, probe.sectioned(probed, nonce, options.limits.probe_timeout)),
                                   (probe.ENVIRONMENT_KEY, probe.environment_cell(nonce))]
    warm = options.zygote and report.mode == "bwrap" and device == "cpu"  # an accelerator does not survive a fork
    if warm:
        report = dataclasses.replace(report, mode="bwrap+zygote")
    given = _given_cells(lesson, submission.notebook)
    prefix = _warm_prefix(lesson, submission.notebook, options, start) if warm else frozenset()
    limits = options.limits
    executed = execution.execute(submission.notebook, tail, limits,
                           functools.partial(managers.forked, report, limits, start, warm_cells=bool(prefix))
                           if warm else functools.partial(managers.started, report, limits, start),
                           given=given, warm=prefix)
    return _Ran(executed, report, start, device, checked, fell_back, nonce, evidence_plan, given)


def verdicts_of(lesson: catalog.Lesson, plans: list[probe.ExercisePlan], probes: dict[str, probe.Probe],
              executed: execution.Executed, submission: load.Submission, options: Options,
              numbers: dict[str, float] | None = None) -> list[verdict.ExerciseResult]:
    """Each exercise judged here, outside the kernel, against the lesson's figures and the reference's answers
    (for the student's own numbers, where the course grades the lesson per student)."""
    reference = None if options.public_only else staff_code.reference(lesson)
    checks = staff_code.properties(lesson)
    public = public_expectations(lesson) if reference is not None else {}
    owned = {ex.id: variants.own_figures(lesson, ex.id, list(plan.cases), numbers, submission.notebook, reference is not None)
             for ex, plan in zip(lesson.exercises, plans)}
    return verdict.judge_lesson(lesson.exercises, owned, probes, public, reference, executed.cells, submission.notebook,
                                checks)


def _noted(lesson: catalog.Lesson, submission: load.Submission, release: releases.Release,
           verdicts: list[verdict.ExerciseResult]) -> tuple[list[str], list[verdict.ExerciseResult]]:
    """The result's notes: a notebook of another release or of another lesson says so (in the missing verdicts too)."""
    notes = list(submission.notes)
    notes += [f"{ex.id}: {said}" for ex in lesson.exercises for said in completion.unwaited(submission.notebook, ex.timed)]
    if release.note(lesson.id):
        notes.insert(0, release.note(lesson.id))
    other = handout.other_lesson(lesson, submission.notebook)
    if other and any(v.status == "missing" for v in verdicts):
        hint = (f"this notebook defines {other[1]} of the {other[2]} names of lesson '{other[0]}': is it that "
                f"lesson's notebook? (graded as '{lesson.id}')")
        notes.insert(0, hint)
        verdicts = [dataclasses.replace(v, messages=(hint,) + v.messages) if v.status == "missing" else v
                    for v in verdicts]
    return notes, verdicts


def _environment(options: Options, ran: _Ran) -> tuple[dict[str, Any], dict[str, Any]]:
    """The grader's facts of the host, then what the kernel reported (never overriding them), and the device."""
    env = host.environment(options.jobs_at_once, folders.course_root())
    reported = probe.collect_environment(ran.executed.tail.get(probe.ENVIRONMENT_KEY, SKIPPED), ran.nonce)
    env.update({k: v for k, v in reported.items() if k not in env})
    env["reported_by_kernel"] = sorted(reported)  # after the student's cells: what the kernel said, unverified
    env["isolation"] = sorted(name for name, held in ran.report.layers.items() if held)
    env.update(device_requested=options.device, device_used=device_check.used(ran.checked) if ran.checked else ran.device,
               device_fell_back=bool(ran.fell_back), device_fallback_reason=ran.fell_back or None,
               device_check=ran.checked.to_dict() if ran.checked else None)
    return env, reported


def resolve_device(options: Options, report: isolation.SandboxReport) -> tuple[str, device_check.DeviceCheck | None, str]:
    """(the device the kernels use, the check that saw it work, why it fell back to the CPU or "").

    The CPU needs no check. Any other device must be on the host and work in a sandboxed kernel (device_check);
    else the grade is refused in one line, or graded on the CPU when falling back was asked for.
    """
    if options.device == "cpu":
        return "cpu", None, ""
    checked = None
    if not devices.device_available(options.device):
        why = f"no {options.device.upper()} on this host (no device nodes for it under {devices.device_dir()})"
    else:
        checked = device_check.check(options.device, report, options.limits)
        if checked.works:
            return options.device, checked, ""
        why = f"--device {options.device} does not work in a sandboxed kernel here: {checked.why}"
    if options.device_fallback:
        return "cpu", None, why
    raise DeviceUnavailable(f"{why}; pass --device-fallback to grade on the CPU, or --device cpu")


@functools.cache
def public_expectations(lesson: catalog.Lesson) -> dict[tuple[str, int], expectations.Expectation]:
    """The expectation of every public case, by (exercise, position): the same for every student, so a batch
    asks the reference once (in the parent, before its workers fork) instead of once per grade."""
    reference = staff_code.reference(lesson)
    return {(ex.id, i): expectations.expectation(case, reference) for ex in lesson.exercises for i, case in enumerate(ex.cases)}


def _phases(executed: execution.Executed, given: frozenset[int], judged: float) -> dict[str, float]:
    """Seconds per phase of one grade: kernel start, the lesson's given cells, the student's cells, probes, judge."""
    given_seconds = sum(c.seconds for c in executed.cells if c.index in given)
    phases = dict(executed.timings, given_cells=given_seconds,
                  student_cells=executed.timings.get("cells", 0.0) - given_seconds, judge=judged)
    return {k: round(v, 3) for k, v in phases.items()}


def _warm_prefix(lesson: catalog.Lesson, notebook: Any, options: Options, start: devices.KernelStart) -> frozenset[int]:
    """The notebook's leading cells that the zygote's one run of the lesson's warm cells stands for (none when
    the notebook changed them, or the zygote could not run them)."""
    prefix = handout.warm_prefix(lesson, notebook)
    if not prefix:
        return prefix
    try:
        return prefix if zygote.shared(options.limits, start).warm_cells else frozenset()
    except GraderError:  # the kernel start reports it
        return frozenset()


def _given_cells(lesson: catalog.Lesson, notebook: Any) -> frozenset[int]:
    """Indices of the cells that are the lesson's given code, unchanged (matched by source, not by tags or ids,
    which the student controls): a cold kernel's first imports run there, so they get the given budget."""
    given = handout.given_sources(lesson)
    return frozenset(i for i, cell in enumerate(notebook.cells)
                     if cell.cell_type == "code" and cell.source.strip() in given)


def _lesson_id(lesson_id: str | None, submission: load.Submission) -> str:
    """The lesson to grade against: the notebook's metadata (written by `release`) and `--lesson` must agree.

    Either alone decides; when both are given and differ, nothing is guessed.
    """
    name = Path(submission.path).name
    hint = submission.lesson_hint
    if lesson_id:
        catalog.get(lesson_id)  # an unknown --lesson is said first, with the lessons there are
    if hint and lesson_id and hint != lesson_id:
        raise LessonError(f"{name}: the notebook is lesson '{hint}' (its metadata says so), not '{lesson_id}'; "
                          f"grade it with --lesson {hint}, or start from the notebook of lesson '{lesson_id}'")
    if lesson_id or hint:
        return str(lesson_id or hint)
    known = ", ".join(catalog.available())
    raise LessonError(f"{name}: no lesson in the notebook's metadata; pass --lesson ({known})")


__all__ = ["Options", "grade", "rejected"]
