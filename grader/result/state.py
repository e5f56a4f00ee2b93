"""What `grader course` says: the course in force, where each piece of its private state lives (and which pieces
are this account's, shared with every course that has none of its own), and its policy per lesson."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grader.lesson import catalog, course, draw
from grader.result import sign


@dataclass(frozen=True)
class Piece:
    """One piece of the course's private state."""

    what: str
    path: Path | None
    """Where it is read from (None: nowhere)."""
    whose: str
    """`the course's`, `this account's, shared by every course without one`, `named by GRADER_KEY`, or `none`."""
    detail: str = ""


@dataclass(frozen=True)
class LessonLine:
    lesson: str
    policy: str
    """The course's policy in words."""
    per_student: bool
    why: str
    """Why the lesson is (or is not) graded per student."""


@dataclass(frozen=True)
class CourseState:
    label: str
    declared: Path | None
    """The course.toml read, if any."""
    timezone: str
    private: Path | None
    private_mode: str
    pieces: tuple[Piece, ...]
    lessons: tuple[LessonLine, ...]
    lms: tuple[str, ...] = ()
    """The LMS courses the course is bound to and who its instructors are, in words (the service says them)."""


def _whose(path: Path | None, own: Path | None, env: str) -> str:
    if path is None or not path.is_file():
        return "none"
    if os.environ.get(env):
        return f"named by {env}"
    if own is not None and path.parent == own:
        return "the course's"
    return "this account's, shared by every course without one"


def describe() -> CourseState:
    """The course in force, read now."""
    here = course.current()
    private = here.private
    mode = ""
    if private is not None and private.is_dir():
        mode = oct(private.stat().st_mode & 0o777)[2:].zfill(4)
    key = sign.key_path()
    secret = draw.secret_path()
    pieces = [Piece("signing key", key if key and key.is_file() else None, _whose(key, private, "GRADER_KEY"),
                    sign.fingerprint(sign.signing_key()) if key and key.is_file() else "grader keys init makes one"),
              Piece("secret of the hidden cases", secret if secret.is_file() else None,
                    _whose(secret, private, "GRADER_SECRET"),
                    "" if secret.is_file() else "grader keys init makes one; without it seeds come from the lesson "
                    "and the student alone"),
              Piece("lessons released per student", draw.record_path(), "the course's" if draw.released()
                    else "none", ", ".join(draw.released()))]
    released = set(draw.released())
    lines = []
    for lesson_id in catalog.available():
        policy = here.policy(lesson_id)
        on = draw.enabled(lesson_id)
        why = ("course.toml says so" if policy.variants is not None
               else "released with --variants" if lesson_id in released else "not released per student")
        lines.append(LessonLine(lesson_id, policy.describe(here.timezone), on, why))
    return CourseState(here.label, here.root / course.COURSE_FILE if here.declared and here.root else None,
                       here.timezone, private, mode, tuple(pieces), tuple(lines))
