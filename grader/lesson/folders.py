"""Where the course lives: the folders `lessons/`, `templates/` and `solutions/` are read from."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGED = Path(__file__).resolve().parent.parent / "course"
"""Where an installed (non-editable) grader keeps its copy of `lessons/` and `templates/` (never `solutions/`)."""


def course_roots() -> list[Path]:
    """Folders searched for `lessons/`, `templates/` and `solutions/`, first match wins.

    `GRADER_COURSE` (or `grader --course DIR`) first, then the checkout this
    package runs from, then the copy installed with the package. `solutions/`
    is instructor data: it is only ever found in the first two.
    """
    roots = []
    env = os.environ.get("GRADER_COURSE")
    if env:
        roots.append(Path(env).resolve())
    checkout = Path(__file__).resolve().parent.parent.parent
    if (checkout / "lessons").is_dir():
        roots.append(checkout)
    roots.append(PACKAGED)
    return roots


def course_folder(name: str) -> Path:
    """`lessons`, `templates` or `solutions`: the first root holding it (else where the first root would)."""
    roots = course_roots()
    return next((root / name for root in roots if (root / name).is_dir()), roots[0] / name)


def course_root() -> Path:
    """The root `lessons/` is read from (its git commit is recorded with every grade)."""
    return course_folder("lessons").parent
