"""A busy machine never changes a grade: time limits count the student's own work, scaled by how slow the machine is
when a run begins (measured: host.slowdown), and every shipped sample and declared mistake graded beside twice as
many spinning processes as cores scores as it does on a quiet machine, with no grader failure and the same report
sections."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.authoring.steady import busy_processes
from grader.base import host
from grader.base.limits import MOST_BUSY, Limits, busy_factor
from grader.lesson import catalog, mistakes
from grader.result.record import INTERNAL_ERROR

ROOT = Path(__file__).resolve().parent.parent
BUSY = 2 * (os.cpu_count() or 1)


def test_a_slowdown_is_a_factor_only_past_the_machines_jitter_and_never_past_the_cap():
    assert busy_factor(1.0) == busy_factor(1.49) == 1.0  # ordinary jitter: limits as written
    assert busy_factor(2.34) == 2.3 and busy_factor(1.5) == 1.5
    assert busy_factor(50.0) == MOST_BUSY == 4.0


def test_scaled_limits_stretch_every_wall_clock_budget_and_nothing_else():
    limits = Limits(cell_timeout=30, given_cell_timeout=120, cell_timeouts=(("answer-x", 3),), probe_timeout=30,
                    notebook_timeout=300, startup_timeout=60, cpu_seconds=600, memory_bytes=2**30)
    twice = limits.scaled(2.0)
    assert (twice.cell_timeout, twice.given_cell_timeout, twice.cell_timeouts, twice.probe_timeout,
            twice.notebook_timeout, twice.startup_timeout) == (60, 240, (("answer-x", 6),), 60, 600, 120)
    assert (twice.cpu_seconds, twice.memory_bytes) == (600, 2**30)  # CPU seconds are the student's own already
    assert limits.scaled(1.0) is limits


def test_beside_spinning_processes_the_measured_slowdown_stretches_the_limits():
    quiet = host.slowdown()
    with busy_processes(BUSY):
        busy = max(host.slowdown() for _ in range(3))
    assert busy >= 1.5 and busy_factor(busy) > 1.0, (quiet, busy)  # 2 per core: about a third of a core each


def _corpus(folder: Path) -> dict[str, Path]:
    """Every shipped sample and every declared mistake, a class folder per lesson."""
    made = {}
    for lesson_id in catalog.available():
        target = folder / lesson_id
        shutil.copytree(ROOT / "samples" / lesson_id, target)
        lesson = catalog.get(lesson_id)
        for mistake in mistakes.declared(lesson):
            nbformat.write(mistakes.notebook(lesson, mistake), str(target / f"mistake-{mistake.name}.ipynb"))
        made[lesson_id] = target
    return made


def _graded(classes: dict[str, Path], out: Path) -> tuple[dict[str, dict[str, object]], list[float]]:
    """Each result's grade-relevant facts (status, score, every exercise's status and score, the report's sections,
    the grader's own failure), and by how much each run's limits were stretched."""
    facts, stretched = {}, []
    for lesson_id, folder in classes.items():
        done = subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--lesson", lesson_id, "--out",
                               str(out / lesson_id), "--jobs", "2"], capture_output=True, text=True, timeout=900)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
        for path in sorted((out / lesson_id / "results").glob("*.json")):
            data = json.loads(path.read_text())
            facts[f"{lesson_id}/{path.stem}"] = {
                "status": data["status"], "score": data.get("score"), "error": data.get("error"),
                "exercises": [(e["id"], e["status"], e["score"]) for e in data.get("exercises", [])],
                "sections": [key for key in ("measured", "simulated") if data.get(key)]}
            stretched.append((data.get("run") or {}).get("busy", 1.0))
    return facts, stretched


@pytest.mark.kernel
def test_every_sample_and_mistake_scores_the_same_beside_twice_as_many_busy_processes_as_cores(tmp_path):
    classes = _corpus(tmp_path / "classes")
    quiet, _ = _graded(classes, tmp_path / "quiet")
    with busy_processes(BUSY):
        busy, stretched = _graded(classes, tmp_path / "busy")
    failed = [name for name, f in [*quiet.items(), *busy.items()] if str(f["error"]).startswith(INTERNAL_ERROR)]
    assert len(quiet) >= 20 and failed == []
    assert busy == quiet
    assert max(stretched) > 1.0  # the busy runs' limits were stretched, and their results say so
