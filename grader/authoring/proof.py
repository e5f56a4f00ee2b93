"""A lesson proves its hidden cases: each mistake it declares (solutions/<id>/mistakes.toml) must lose points on the
exercise it targets, under every seed, not only under some.

A hidden case drawn per student can catch a mistake under one student's seed and
let it through under another's (a near-1 edge case that a float32 shortcut
passes half the time): then a student's score depends on their secret draw.
Each declared mistake is graded once in a fresh kernel that is probed with the
hidden cases of every seed at once, and judged seed by seed, so twenty seeds
cost one run. Where a seed lets it through, the author is told which mistake,
which exercise and how many seeds.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader import grading
from grader.base.options import Options
from grader.intake import load
from grader.judge import judging
from grader.lesson import catalog, draw as drawing, mistakes, releases
from grader.run import probe, submission

SEEDS = tuple(range(7000, 7005))
"""The seeds a validation draws hidden cases from (five: `validate --proof-seeds N` asks for more)."""


@dataclass(frozen=True)
class Caught:
    """How often one declared mistake lost points on its exercise."""

    mistake: mistakes.Mistake
    caught: int
    seeds: int

    def line(self) -> str:
        if self.caught == self.seeds:
            return f"{self.mistake.name!r} loses points on {self.mistake.exercise} under all {self.seeds} seeds"
        return (f"the mistake {self.mistake.name!r} passes {self.mistake.exercise} under {self.seeds - self.caught} of "
                f"{self.seeds} seeds: a hidden case that targets it is not drawn every time")


def prove(lesson: catalog.Lesson, options: Options, seeds: tuple[int, ...] = SEEDS,
          workdir: str | Path | None = None) -> list[Caught]:
    """Each declared mistake, graded under every seed (one kernel run per mistake)."""
    found = []
    for mistake in mistakes.declared(lesson):
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            path = Path(tmp) / "mistake.ipynb"
            nbformat.write(mistakes.notebook(lesson, mistake), str(path))
            scores = scores_by_seed(lesson, path, seeds, options)
        target = lesson.exercise(mistake.exercise).points
        found.append(Caught(mistake, sum(1 for by_exercise in scores.values()
                                         if by_exercise.get(mistake.exercise, 0.0) < target), len(seeds)))
    return found


def scores_by_seed(lesson: catalog.Lesson, path: Path, seeds: tuple[int, ...],
                   options: Options) -> dict[int, dict[str, float]]:
    """Each exercise's score under each seed: one run of the notebook, probed with every seed's hidden cases."""
    read = load.read(path)
    ready = grading.prepared(lesson, options.public_only)
    restored, _ = releases.restore(lesson, read.notebook, ready.given_by_id)
    per_seed = {seed: submission.plans_for(lesson, seed, False) for seed in seeds}
    public = {ex.id: len(ex.cases) for ex in lesson.exercises}
    merged = [probe.ExercisePlan(plan.exercise_id, plan.needs, plan.cases[:public[plan.exercise_id]] + tuple(
        case for plans in per_seed.values() for case in plans[index].cases[public[plan.exercise_id]:]))
        for index, plan in enumerate(per_seed[seeds[0]])]
    ran = submission.run(ready, restored, merged, options, drawing.hash_seed_for(None, seeds[0]))
    probes = ran.probes
    scores: dict[int, dict[str, float]] = {}
    for seed, plans in per_seed.items():
        sliced = {}
        for index, plan in enumerate(plans):
            found, shown = probes[plan.exercise_id], public[plan.exercise_id]
            start = shown + sum(len(per_seed[s][index].cases) - shown for s in seeds[:seeds.index(seed)])
            answers = found.results[:shown] + found.results[start:start + len(plan.cases) - shown]
            sliced[plan.exercise_id] = dataclasses.replace(found, results=answers) if found.status == "ok" else found
        verdicts = judging.verdicts_of(ready, plans, sliced, ran, restored, options)
        scores[seed] = {v.id: v.score for v in verdicts}
    return scores
