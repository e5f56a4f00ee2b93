"""Course staff's code, run in the grader process only: reference answers, property checks, hidden cases.

Each lives in `solutions/<lesson>/`, which no kernel can read; a solutions
folder inside the Python environment (which every kernel sees) is refused.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from grader.base.errors import LessonError
from grader.lesson import catalog
from grader.lesson.cases import Checks
from grader.lesson.handout import answer_cells, scaffold, tagged


@functools.lru_cache(maxsize=64)
def reference(lesson: catalog.Lesson, numbers: tuple[tuple[str, float], ...] = ()) -> dict[str, Any]:
    """The reference namespace, built in the grader process only.

    It runs the scaffold cells tagged `reference` (given code the answers
    build on), with a student's variant `numbers` where given, and then the
    answer cells tagged `reference`.
    """
    namespace: dict[str, Any] = {"__name__": f"reference_{lesson.id.replace('-', '_')}"}
    for source in tagged(scaffold(lesson, dict(numbers), text=False).cells, "reference"):
        exec(compile(source, f"<{lesson.id} given>", "exec"), namespace)
    for source in tagged(answer_cells(lesson).values(), "reference"):
        exec(compile(source, f"<{lesson.id} reference>", "exec"), namespace)
    return namespace


def _outside_the_environment(folder: Path) -> None:
    """Kernels see the Python environment (read-only): solutions kept inside it would be readable by student code."""
    where = folder.resolve()
    for prefix in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}:
        if where == prefix or prefix in where.parents:
            raise LessonError(f"{where} lies inside the Python environment {prefix}, which every kernel can read: "
                              "keep solutions/ in the course folder instead")


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LessonError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def properties(lesson: catalog.Lesson) -> Checks:
    """The lesson's public consistency checks (`lessons/<id>/properties.py`): each is given what was asked
    (cases.Asked, decoded) and the student's decoded answer."""
    path = lesson.folder / "properties.py"
    if not path.is_file():
        return {}
    module = _module(path, f"properties_{lesson.id.replace('-', '_')}")
    return {name: fn for name, fn in vars(module).items() if callable(fn) and not name.startswith("_")}


def hidden_cases(lesson: catalog.Lesson, seed: int) -> dict[str, list[catalog.Case]]:
    """Hidden cases per exercise, drawn from `seed` by `solutions/<id>/hidden.py`."""
    path = lesson.solutions / "hidden.py"
    if not path.is_file():
        raise LessonError(f"no hidden cases for lesson {lesson.id}: {path} is missing (run from the course checkout, "
                          "or name its folder with --course DIR or GRADER_COURSE)")
    _outside_the_environment(lesson.solutions)
    module = _module(path, f"hidden_{lesson.id.replace('-', '_')}")
    drawn = module.cases(np.random.default_rng(seed))
    unknown = set(drawn) - {ex.id for ex in lesson.exercises}
    if unknown:
        raise LessonError(f"{path}: cases for unknown exercises {sorted(unknown)}")
    return {ex_id: [catalog.case_from_spec(spec, hidden=True) for spec in specs] for ex_id, specs in drawn.items()}
