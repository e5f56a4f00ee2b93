"""`grader new LESSON_ID`: a lesson's four files with one worked exercise per id, valid as written.

It writes `lessons/<id>/lesson.toml` and `scaffold.py`, `solutions/<id>/answers.py`, `hidden.py`, a declared
mistake (`mistakes.toml` and its patch) and the built `solution.ipynb`, with matching exercise and cell ids, in
the course folder (`--course DIR`, `GRADER_COURSE`, or the checkout). Nothing that exists is overwritten.
docs/authoring.md says what each line means.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.base import files
from grader.base.errors import GraderError
from grader.lesson import catalog, folders

_ID = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")  # whole strings only (fullmatch: no newline slips past `$`)


def _function(exercise_id: str) -> str:
    return exercise_id.replace("-", "_") + "_mean"


def _scaffold(lesson_id: str, exercises: tuple[str, ...]) -> str:
    parts = [f"""# %% [markdown] id=intro
# # {lesson_id}
#
# Replace this text with the lesson's. Cells tagged `given` are the lesson's code; each
# exercise has one answer cell marked YOUR ANSWER (docs/authoring.md).

# %% id=given-imports tags=given,reference
import math
"""]
    for exercise in exercises:
        fn = _function(exercise)
        parts.append(f"""
# %% [markdown] id=ex-{exercise}
# ## Exercise `{exercise}`
#
# Write `{fn}(values)`: the mean of a list of numbers; raise `ValueError` for an empty
# list. For `[1, 2, 3]` it is 2.0.

# %% id=answer-{exercise} tags=answer
# YOUR ANSWER: define {fn}(values)
def {fn}(values):
    raise NotImplementedError("write {fn}(values)")
""")
    parts.append("""
# %% [markdown] id=explanation tags=explanation
# ## Your explanation
#
# Replace this prompt with the lesson's written question.
""")
    return "".join(parts)


OPTIONAL_TABLES = """
# What follows is optional, written out commented so that the skeleton shows it (docs/authoring.md says more).
#
# Numbers a course may give each student (grader release --variants): a given cell that assigns them, and each
# name's choices, the first being the number that cell assigns (the text's own); `{{NAME}}` in the text shows it.
# [variants]
# cell = "given-numbers"
# ARRIVAL_MS = [2.0, 1.5, 2.5]
#
# Names read after the run for the report, never graded: each `measured` (taken while grading) or `simulated`.
# [evidence]
# service_ms = "measured"
#
# The lesson's own words in its reports.
# [report]
# percentile_method = "linear (NumPy default)"
# measured_units = "milliseconds"
#
# A written question: a markdown cell tagged explanation (or prediction), graded by rubric in grader review.
# [[written]]
# cell = "explanation"
# title = "Your explanation"
# points = 1
# rubric = [
#   { id = "reason", points = 1, text = "Says why, with the numbers of the exercise" },
# ]
"""


def _toml(lesson_id: str, exercises: tuple[str, ...]) -> str:
    text = f'id = "{lesson_id}"\ntitle = "{lesson_id}"\n' + OPTIONAL_TABLES
    for exercise in exercises:
        fn = _function(exercise)
        text += f"""
[[exercises]]
id = "{exercise}"
title = "The mean of a list"
kind = "simulated"
points = 1
needs = ["{fn}"]
  [[exercises.cases]]
  call = "{fn}"
  args = [[1, 2, 3]]
  expect = 2.0
  [[exercises.cases]]
  call = "{fn}"
  args = [[]]
  raises = "ValueError"
"""
    return text


def _answers(exercises: tuple[str, ...]) -> str:
    return "".join(f"""# %% id=answer-{exercise} tags=reference
def {_function(exercise)}(values):
    if len(values) == 0:
        raise ValueError("the mean of no values")
    return math.fsum(values) / len(values)

""" for exercise in exercises)


def _hidden(lesson_id: str, exercises: tuple[str, ...]) -> str:
    body = "".join(f"""        "{exercise}": [{{"call": "{_function(exercise)}", "args": [values]}} for values in lists]
                       + [{{"call": "{_function(exercise)}", "args": [[]], "raises": "ValueError"}}],
""" for exercise in exercises)
    return f'''"""Hidden cases for lesson {lesson_id}: drawn per student from the course secret (docs/authoring.md)."""

from __future__ import annotations

from typing import Any

import numpy as np


def cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    lists = [rng.integers(-50, 50, int(rng.integers(1, 12))).tolist() for _ in range(3)]
    lists += [[7], [1, 2]]  # drawn on purpose, every time: one value; a mean that is not whole (catches `//`)
    return {{
{body}    }}
'''


def _mistakes(exercise: str) -> str:
    return f"""# The wrong answers this lesson's hidden cases are built to catch (docs/authoring.md, "Mistakes"): each is
# graded under several seeds by `grader validate`, and one that some seed lets through is named.
# A patch is whole answer cells in the scaffold's `# %%` form, without `tags=reference`: each replaces the
# reference's cell of the same id, so it defines every name that cell defines.

[[mistakes]]
name = "the mean by floor division"
exercise = "{exercise}"
patch = "mistakes/{exercise}-floor-division.py"
"""


def _patch(exercise: str) -> str:
    fn = _function(exercise)
    return f"""# The mean by floor division: right whenever the sum divides evenly, so the public case [1, 2, 3] passes it;
# the hidden case [1, 2], drawn for every student, catches it.
# %% id=answer-{exercise}
def {fn}(values):
    if len(values) == 0:
        raise ValueError("the mean of no values")
    return math.fsum(values) // len(values)
"""


def create(lesson_id: str, exercises: tuple[str, ...] = ()) -> list[Path]:
    """Write the new lesson's files; returns them. Refuses a malformed id or a lesson that exists, in one line."""
    exercises = exercises or ("first-exercise",)
    for name in (lesson_id, *exercises):
        if not _ID.fullmatch(name):
            raise GraderError(f"{name!r} is not an id: lower-case letters and digits, words joined by '-'; nothing "
                              "was written")
    if len(set(exercises)) != len(exercises):
        raise GraderError("an exercise id is given twice")
    root = folders.course_folder("lessons").parent
    if root == folders.PACKAGED:
        raise GraderError("no course folder to write into: run from the course checkout or pass --course DIR")
    folder, solutions = root / "lessons" / lesson_id, root / "solutions" / lesson_id
    if folder.exists() or solutions.exists():
        raise GraderError(f"{folder} or {solutions} exists already; nothing was written")
    try:
        written = [files.write_text(folder / "lesson.toml", _toml(lesson_id, exercises)),
                   files.write_text(folder / "scaffold.py", _scaffold(lesson_id, exercises)),
                   files.write_text(solutions / "answers.py", _answers(exercises)),
                   files.write_text(solutions / "hidden.py", _hidden(lesson_id, exercises)),
                   files.write_text(solutions / "mistakes.toml", _mistakes(exercises[0])),
                   files.write_text(solutions / "mistakes" / f"{exercises[0]}-floor-division.py", _patch(exercises[0]))]
        catalog.forget()
        return [*written, build_solution(lesson_id)]
    except BaseException:  # a lesson half made is no lesson: what this call made goes, nothing else
        import shutil

        for made in (folder, solutions):
            shutil.rmtree(made, ignore_errors=True)
        catalog.forget()
        raise


def build_solution(lesson_id: str) -> Path:
    """`grader build-solution`: `solutions/<id>/solution.ipynb`, the scaffold with the reference answers."""
    import nbformat

    from grader.lesson import handout

    lesson = catalog.get(lesson_id)
    return files.write_text(lesson.solutions / "solution.ipynb", nbformat.writes(handout.solution_notebook(lesson)))
