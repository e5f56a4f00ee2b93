"""The result of one grade: every stage's facts (the draw, the run, the verdicts) gathered in one typed record,
the instructor's part joined."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.base import host
from grader.base.options import Options
from grader.intake import load
from grader.judge.verdict import Judged
from grader.kernel import devices
from grader.lesson import folders
from grader.result import joining, parts
from grader.result.record import GradeResult
from grader.result.shown import evidence_values, public_answers
from grader.run import device_check, execution, probe
from grader.run.cells import SKIPPED
from grader.run.submission import Drawn, Ran


def recorded(drawn: Drawn, ran: Ran, judged: Judged, options: Options) -> GradeResult:
    """The result of a grade: every stage's facts in one typed record, the instructor's part joined."""
    lesson, submission, executed, check = drawn.lesson, drawn.submission, ran.executed, options.public_only
    env, reported = _environment(options, ran)
    how = parts.MeasuredHow("timings depend on the host and the load; they are checked for structure, never for speed",
                            reported.get("jax_matmul_precision"),
                            lesson.report.get("percentile_method", "not stated by the lesson"),
                            lesson.report.get("measured_units", ""), options.jobs_at_once)
    shown = public_answers(lesson, drawn.plans, ran.probes)
    values = evidence_values(lesson, ran.evidence_plan, ran.evidence)
    prompts = drawn.prepared.prompts
    return joining.joined(GradeResult(
        status="graded", lesson=lesson.id, student=submission.student,
        score=float(sum(v.score for v in judged.verdicts)), max_score=lesson.max_score, exercises=judged.verdicts,
        measured=parts.Section(tuple(shown["measured"]), tuple(values["measured"].items()), how)
        if shown["measured"] else None,
        simulated=parts.Section(tuple(shown["simulated"]), tuple(values["simulated"].items())),
        environment=env,
        sandbox=parts.SandboxFacts.from_dict(dict(ran.report.to_dict(),
                                                  memory_bound=devices.memory_bound(ran.start.device, options.limits))),
        mode="check" if check else "grade", seed=None if check else drawn.draw.seed,
        seed_from="" if check else drawn.draw.seed_from, hash_seed=drawn.draw.hash_seed,
        digest=submission.digest, submission=Path(submission.path).name,
        graded_at=env["graded_at"], notes=judged.notes + tuple(executed.dropped) + _busy_note(ran.busy),
        run=parts.RunFacts(executed.attempts, round(executed.seconds, 3),
                           tuple(_phases(executed, ran.given, judged.seconds).items()),
                           executed.flood, executed.deadline_hit, ran.busy),
        cells=tuple(parts.CellFacts(c.index, c.cell_id, c.status, f"{c.ename}: {c.evalue}".strip(": "),
                                    round(c.seconds, 3)) for c in executed.cells if c.status != "empty"),
        stored_outputs=len(submission.as_submitted),
        as_submitted=tuple(_differing(submission.as_submitted, executed.notebook)),
        release=drawn.release, numbers=tuple(sorted(drawn.numbers.items())) if drawn.numbers else (),
        handout_of=drawn.handout_of,
        explanations=tuple(parts.Explanation(e.cell_id, e.kind, e.text, e.text.strip() in prompts)
                           for e in submission.explanations),
        notebook=executed.notebook,
    ), lesson)


def _differing(as_submitted: tuple[load.StoredOutput, ...], executed: Any) -> list[parts.Differing]:
    """Stored outputs that differ from what the fresh run printed (shown as unverified)."""
    fresh = {cell["id"]: "".join(load.output_text(o) for o in cell.get("outputs", [])) for cell in executed.cells
             if cell.cell_type == "code"}
    return [parts.Differing(item.cell_id, item.text, fresh.get(item.cell_id, "")[:load.AS_SUBMITTED_CHARS])
            for item in as_submitted if fresh.get(item.cell_id, "").strip() != item.text.strip()]


def _environment(options: Options, ran: Ran) -> tuple[dict[str, Any], dict[str, Any]]:
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


def _phases(executed: execution.Executed, given: frozenset[int], judged: float) -> dict[str, float]:
    """Seconds per phase of one grade: kernel start, the lesson's given cells, the student's cells, probes, judge."""
    given_seconds = sum(c.seconds for c in executed.cells if c.index in given)
    phases = dict(executed.timings, given_cells=given_seconds,
                  student_cells=executed.timings.get("cells", 0.0) - given_seconds, judge=judged)
    return {k: round(v, 3) for k, v in phases.items()}


def _busy_note(busy: float) -> tuple[str, ...]:
    """What the result says when the machine was busy as the run began (the limits stretched to match)."""
    if busy == 1.0:
        return ()
    return (f"the grading machine was busy when this ran (a process got 1/{busy:g} of a core): every time limit was "
            f"scaled by {busy:g}, so your code had the time it would have had on a quiet machine",)
