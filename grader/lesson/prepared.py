"""The prepared lesson: everything a grade reads of its lesson, read once, as one value.

A host (a batch, a service's lesson host, a cluster's worker, `grader grade` for its one notebook) prepares the
lesson once (grading.prepared); forked workers inherit it. A grade then takes the prepared lesson, the student's
draw and the notebook, and never reads the lesson's folders again: the given cells it recognises, the prompts
an unanswered explanation still holds, the warm cells a kernel template ran, the consistency checks, the
reference and its answers to every public case (and, for a student's own numbers, the reference itself), the
compilation cache its kernels read, and the names the course's other lessons need.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from grader.lesson import catalog
from grader.lesson.cases import Checks


@dataclass(frozen=True, eq=False)
class Prepared:
    """One lesson read for grading (grading.prepared builds it: the reference's answers are the judge's)."""

    lesson: catalog.Lesson
    given_by_id: Mapping[str, str]
    """The scaffold's given code cells, by cell id (an older release's cells are mapped onto these)."""
    given_sources: frozenset[str]
    """The given cells' sources, stripped: a notebook's cell that is one of them runs on the given budget."""
    prompts: frozenset[str]
    """The scaffold's prediction and explanation prompts, stripped: an explanation still reading so is unanswered."""
    warm_sources: tuple[str, ...]
    """The lesson's warm cells, which a kernel template runs once (handout.warm_sources)."""
    checks: Checks
    """The lesson's public consistency checks (properties.py)."""
    reference: dict[str, Any] | None
    """The reference's namespace for the seed's numbers; None for a self-check, which has none."""
    public: Mapping[tuple[str, int], Any]
    """The expectation of every public case, by (exercise, position): the same for every student."""
    compile_cache: str
    """The lesson's filled compilation cache for the CPU, or "" (an accelerator's is looked up at its grade)."""
    seed_numbers: Mapping[str, float]
    """The seed's numbers (each variant's first choice): a student drawn other numbers meets other figures."""
    reference_for: Callable[[tuple[tuple[str, float], ...]], dict[str, Any]] | None
    """The reference's namespace for a student's own numbers (sorted pairs; cached where it is built); None for a
    self-check, and for a lesson none of whose public figures follow the numbers (`varies`)."""
    needed: frozenset[str]
    """Every name the lesson's exercises need."""
    others: tuple[tuple[str, frozenset[str]], ...]
    """The course's other lessons that could be read, each with the names its exercises need: a notebook that
    defines far more of another lesson's names than of its own is said to be that lesson's, perhaps."""
