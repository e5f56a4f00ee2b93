"""Where the course lives: the course folder, and the folders `lessons/`, `templates/` and `solutions/` are read from."""

from __future__ import annotations

import functools
import os
from pathlib import Path

PACKAGED = Path(__file__).resolve().parent.parent / "course"
"""Where an installed (non-editable) grader keeps its copy of `lessons/` and `templates/` (never `solutions/`)."""
CHECKOUT = Path(__file__).resolve().parent.parent.parent
"""The folder this package runs from, when it runs from a checkout of the course."""
COURSE_FILE = "course.toml"


def course_home() -> Path | None:
    """The course folder, found as git finds its repository: `GRADER_COURSE` (or `grader --course DIR`), else the
    nearest folder holding a course.toml from the working directory upwards, else the checkout this package runs
    from (when it is a course); None where there is none (a student's machine)."""
    env = os.environ.get("GRADER_COURSE")
    if env:
        return _resolved(env)
    try:
        here = Path.cwd()
    except OSError:  # the working directory was removed
        here = None
    for folder in (here, *here.parents) if here else ():
        if (folder / COURSE_FILE).is_file():
            return folder
    return CHECKOUT if (CHECKOUT / COURSE_FILE).is_file() else None


@functools.lru_cache(maxsize=8)
def _resolved(named: str) -> Path:
    """A folder named by GRADER_COURSE, links resolved once per process (a server asks for it on every upload)."""
    return Path(named).resolve()


def course_roots() -> list[Path]:
    """Folders searched for `lessons/`, `templates/` and `solutions/`, first match wins.

    The course folder first (course_home), then the checkout this package runs
    from, then the copy installed with the package. `solutions/` is instructor
    data: it is only ever found in the first two.
    """
    roots = []
    home = course_home()
    if home is not None:
        roots.append(home)
    if (CHECKOUT / "lessons").is_dir() and CHECKOUT not in roots:
        roots.append(CHECKOUT)
    roots.append(PACKAGED)
    return roots


def course_folder(name: str) -> Path:
    """`lessons`, `templates` or `solutions`: the first root holding it (else where the first root would)."""
    roots = course_roots()
    return next((root / name for root in roots if (root / name).is_dir()), roots[0] / name)


def course_root() -> Path:
    """The root `lessons/` is read from (its git commit is recorded with every grade)."""
    return course_folder("lessons").parent
