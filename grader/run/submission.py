"""One submission run: the notebook as this student's draw makes it, run in a fresh isolated kernel with its probes.

`Drawn` is what the spine's draw decided (the notebook to run, the prepared lesson, the student's draw and the cases
every exercise asks); `run` plans the isolation and the device, starts the kernel (forked from a warm template where
one serves), runs the notebook and the probe tail, and reads what the probes printed: `Ran`, plain data for the judge.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from typing import Any

from grader.base.errors import DeviceUnavailable, GraderError, SandboxUnavailable
from grader.base.options import Options
from grader.intake import load
from grader.kernel import compile_cache, devices, isolation, leftovers, managers, sandbox, zygote
from grader.lesson import catalog, draw as drawing, releases, staff_code
from grader.lesson.prepared import Prepared
from grader.run import device_check, execution, probe
from grader.run.cells import SKIPPED

PROBES_KEY = "__probes__"
"""The tail cell that probes every exercise, one section each."""


@dataclass(frozen=True)
class Drawn:
    """A submission as this student's draw makes it: the notebook as it will run (their handout's numbers
    restored, an older release's cells mapped), its prepared lesson, their draw and the cases every exercise asks."""

    submission: load.Submission
    prepared: Prepared
    release: releases.Release
    release_note: str
    """What the report says of the notebook's release ("" when it is the current one, nothing restored)."""
    draw: drawing.Draw
    notes: tuple[str, ...]
    """Who the notebook is (an owner mark naming another student), numbers held elsewhere."""
    handout_of: str | None
    plans: list[probe.ExercisePlan]
    held: dict[str, float]
    """The numbers the notebook's variant cell runs with: the student's own where the draw set them, else those the
    notebook held ({} where it has no variant cell)."""
    own_reference: dict[str, Any] | None
    """The reference's namespace for the student's own numbers, where they are not the seed's (graded only)."""

    @property
    def lesson(self) -> catalog.Lesson:
        return self.prepared.lesson

    @property
    def numbers(self) -> dict[str, float] | None:
        return self.draw.own_numbers()


@dataclass(frozen=True)
class Ran:
    """One submission's run, how it was isolated, and what its probes read (decoded, not yet judged)."""

    executed: execution.Executed
    report: isolation.SandboxReport
    start: devices.KernelStart
    device: str
    checked: device_check.DeviceCheck | None
    fell_back: str
    nonce: str
    evidence_plan: probe.ExercisePlan
    given: frozenset[int]
    probes: dict[str, probe.Probe]
    evidence: probe.Probe
    busy: float = 1.0
    """How much the time limits were stretched because the machine was busy when the run began (limits.busy_factor
    of host.slowdown): a cell is timed out for its own work, never for other processes' load."""


def plans_for(lesson: catalog.Lesson, seed: int, public_only: bool) -> list[probe.ExercisePlan]:
    """Every exercise's cases: the lesson's public ones, then the hidden ones `seed` draws (none in a self-check)."""
    hidden = {} if public_only else staff_code.hidden_cases(lesson, seed)
    columns = {case.name: case.columns for ex in lesson.exercises for case in ex.cases if case.columns}
    return [probe.ExercisePlan(ex.id, ex.needs, tuple(ex.cases) + tuple(
                dataclasses.replace(case, columns=case.columns or columns.get(case.name, ()))  # names in feedback
                for case in hidden.get(ex.id, [])))
            for ex in lesson.exercises]


def run(prepared: Prepared, notebook: Any, plans: list[probe.ExercisePlan], options: Options, hash_seed: int) -> Ran:
    """Plan the isolation and the device, then run the notebook and its probes in a fresh kernel."""
    lesson = prepared.lesson
    limits, busy = options.limits.for_this_machine()  # a busy machine's slowness is never the student's
    options = dataclasses.replace(options, limits=limits)
    report = sandbox.plan(options.limits, options.sandbox, options.require_sandbox)
    if report.kernel_as == "root" and options.sandbox != "none":
        raise SandboxUnavailable(f"refusing to run student code as root: {report.missing_reason}")
    device, checked, fell_back = resolve_device(options, report)
    cache = "" if report.mode != "bwrap" else compile_cache.existing(lesson, device) if device != "cpu" else (
        prepared.compile_cache if prepared.compile_cache and os.path.isdir(prepared.compile_cache) else "")
    start = devices.KernelStart(hash_seed, device, lesson.warm_imports, cache, prepared.warm_sources)
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
    given = frozenset(i for i, cell in enumerate(notebook.cells)  # matched by source: tags and ids are the student's
                      if cell.cell_type == "code" and cell.source.strip() in prepared.given_sources)
    prefix = _warm_prefix(prepared, notebook, options, start) if warm else frozenset()
    limits = options.limits
    executed = execution.execute(notebook, tail, limits,
                                 functools.partial(managers.forked, report, limits, start, warm_cells=bool(prefix))
                                 if warm else functools.partial(managers.started, report, limits, start),
                                 given=given, warm=prefix)
    payload = limits.probe_payload_bytes
    probes = {plan.exercise_id: probe.collect(plan, executed.tail.get(plan.exercise_id, SKIPPED), nonce, payload)
              for plan in plans}
    evidence = probe.collect(evidence_plan, executed.tail.get(probe.EVIDENCE_KEY, SKIPPED), nonce, payload)
    return Ran(executed, report, start, device, checked, fell_back, nonce, evidence_plan, given, probes, evidence, busy)


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


def _warm_prefix(prepared: Prepared, notebook: Any, options: Options, start: devices.KernelStart) -> frozenset[int]:
    """The notebook's leading cells that the zygote's one run of the lesson's warm cells stands for (none when
    the notebook changed them, or the zygote could not run them)."""
    prefix = warm_prefix(prepared.warm_sources, notebook)
    if not prefix:
        return prefix
    try:
        return prefix if zygote.shared(options.limits, start).warm_cells else frozenset()
    except GraderError:  # the kernel start reports it
        return frozenset()


def warm_prefix(sources: tuple[str, ...], notebook: Any) -> frozenset[int]:
    """Indices of the notebook's cells that a template's warm run stands for: the first code cells with source,
    when they are the lesson's warm cells (`sources`: handout.warm_sources) unchanged and in order (matched by
    source, which the student controls as much as ids and tags); otherwise none."""
    if not sources:
        return frozenset()
    code = [(i, cell.source) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code" and cell.source.strip()]
    lead = code[:len(sources)]
    if len(lead) < len(sources) or any(text.strip() != source.strip() for (_, text), source in zip(lead, sources)):
        return frozenset()
    return frozenset(i for i, _ in lead)
