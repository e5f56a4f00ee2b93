"""The course: a folder that holds what grades it.

    course.toml      the course's name, its time zone and its policy per lesson ([lessons.<id>]: due, late,
                     variants, submissions, review)
    lessons/ solutions/ templates/
    private/         (0700) the course key, its secret and which lessons it grades per student; never packaged
                     into a handout, a result or a portfolio

A lesson's `lesson.toml` is content (exercises, cases, rubrics); when it is due,
what lateness costs and whether each student gets numbers of their own are the
course's, so two courses taught from one lesson never share them. The course is
found as git finds its repository: `--course DIR` (GRADER_COURSE), else the
first folder holding a `course.toml` from the working directory upwards, else
the checkout this package runs from.

Every `due` is a moment: a time written without an offset is read in the
course's time zone, a bare date means the end of that day there; a course that
names no time zone cannot have one (refused in one line), so no comparison of
times can fail silently.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from grader.base.errors import LessonError
from grader.base.shapes import Shape
from grader.lesson import folders

COURSE_FILE = folders.COURSE_FILE
PRIVATE = "private"
FEEDBACK = ("public", "verdicts", "score")
"""What a student sees of a graded submission: the public checks only, each exercise's verdict, or the score too."""

_TEXT = {"type": "string"}
_WHEN: dict[str, Any] = {}  # TOML dates and times arrive as datetime objects: checked in _due
_LATE = {"type": "object", "additionalProperties": False,
         "properties": {"percent_per_day": {"type": "number", "minimum": 0, "maximum": 100},
                        "cutoff_days": {"type": "number", "minimum": 0}}}
_SUBMISSIONS = {"type": "object", "additionalProperties": False,
                "properties": {"cooldown_minutes": {"type": "number", "minimum": 0},
                               "max_graded": {"type": "integer", "minimum": 1},
                               "max_bytes": {"type": "integer", "minimum": 1024},
                               "before_due": {"enum": list(FEEDBACK)}, "after_due": {"enum": list(FEEDBACK)},
                               "send_grades": {"type": "boolean"}}}
_REVIEW = {"type": "object", "additionalProperties": False,
           "properties": {"double_percent": {"type": "number", "minimum": 0, "maximum": 100}}}
_LESSON = {"type": "object", "additionalProperties": False,
           "properties": {"due": _WHEN, "late": _LATE, "variants": {"type": "boolean"}, "submissions": _SUBMISSIONS,
                          "review": _REVIEW}}
CONTEXT_ROLES = ("Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator", "Mentor")
"""The LMS context roles (LIS membership vocabulary) a course may let open the instructor's side."""
_LTI = {"type": "object", "additionalProperties": False,
        "properties": {"contexts": {"type": "array", "items": {"type": "string", "minLength": 1}},
                       "instructor_roles": {"type": "array", "items": {"enum": list(CONTEXT_ROLES)}, "minItems": 1},
                       "roster": _TEXT}}
_GROUP = {"type": "string", "pattern": "^[^/?#\\s]{1,255}$"}
_HUB = {"type": "object", "additionalProperties": False,
        "properties": {"instructors": _GROUP, "students": _GROUP, "roster": _TEXT}}
SHAPE = Shape({"type": "object", "additionalProperties": False, "required": ["name", "timezone"],
               "properties": {"name": _TEXT, "timezone": _TEXT, "lti": _LTI, "hub": _HUB,
                              "lessons": {"type": "object", "additionalProperties": _LESSON}}}, draft="7", finite=True)


class LateRule(Protocol):
    """What lateness costs, as the score's join asks it (joining.joined): the one replaceable part of a course's
    late policy. A course with another rule (a fixed cost, a grace period) is one class with these two methods,
    built in `late_rule`; nothing else changes."""

    def percent(self, days: float) -> float:
        """The share of the total taken for this many days late (0 to 100)."""
        ...

    def describe(self) -> str:
        """The rule in a few words, for `grader course` and reports."""
        ...


@dataclass(frozen=True)
class LatePolicy:
    """The course's late rule (`[lessons.<id>.late]`): a share of the student's own score per day late (a part of a
    day counts), all of it after a cut-off."""

    percent_per_day: float = 0.0
    cutoff_days: float | None = None

    def percent(self, days: float) -> float:
        """The share of the student's score taken for this many days late (joining.py applies it)."""
        if days <= 0:
            return 0.0
        if self.cutoff_days is not None and days > self.cutoff_days:
            return 100.0
        return min(100.0, self.percent_per_day * days)

    def describe(self) -> str:
        after = f", nothing after {self.cutoff_days:g} days" if self.cutoff_days is not None else ""
        return f"{self.percent_per_day:g} % a day late{after}"


@dataclass(frozen=True)
class Submissions:
    """The submission service's limits and what a student is shown (`[lessons.<id>.submissions]`)."""

    cooldown_minutes: float = 0.0
    """Between two graded submissions of one student (saving is never blocked)."""
    max_graded: int | None = None
    """Graded submissions a student may make (None: no limit); failures of the grader never count."""
    max_bytes: int = 4 * 1024 * 1024
    """The largest upload taken."""
    before_due: str = "verdicts"
    """What a student sees before the due date: `public`, `verdicts` or `score`."""
    after_due: str = "score"
    """What a student sees after it."""
    send_grades: bool = False
    """Send each grade to the LMS as it is recorded (LTI AGS)."""


@dataclass(frozen=True)
class LessonPolicy:
    """The course's policy for one lesson: when it is due, what lateness costs, per-student numbers, submissions."""

    due: _dt.datetime | None = None
    """When it is due, a moment (zone-aware); None: no due date."""
    late: LateRule | None = None
    """What lateness costs; None: nothing."""
    variants: bool | None = None
    """Numbers of one's own per student: True, False, or None where course.toml does not say (then the course's
    record of a `release --variants` decides)."""
    submissions: Submissions = field(default_factory=Submissions)
    double_percent: float = 0.0
    """The share of written answers graded a second time, blind, to measure the graders' agreement
    (`[lessons.<id>.review] double_percent`)."""

    def days_late(self, marked_late: bool, submitted_at: str = "", extension_days: float = 0.0) -> float:
        """Whole days late (a part of a day counts): from the submission time where one is known and the lesson has
        a due date, else one day for the platform's late mark; an extension moves the due date (with a mark alone,
        any extension excuses it). A submission time that is not a moment is refused, never taken as on time."""
        if submitted_at and self.due is not None:
            seconds = (moment(submitted_at, "the submission time") - self.due).total_seconds() - extension_days * 86400
            return float(-(-seconds // 86400)) if seconds > 0 else 0.0
        return 1.0 if marked_late and extension_days <= 0 else 0.0

    def describe(self, zone: str) -> str:
        due = f"due {self.due.astimezone(_zone(zone)).strftime('%Y-%m-%d %H:%M')} ({zone})" if self.due else "no due date"
        late = self.late.describe() if self.late else "no late policy"
        per_student = {True: "numbers per student", False: "the seed's numbers for all",
                       None: "numbers per student only after release --variants"}[self.variants]
        sub = self.submissions
        limits = (f"cooldown {sub.cooldown_minutes:g} min, "
                  + (f"at most {sub.max_graded} graded, " if sub.max_graded else "")
                  + f"feedback {sub.before_due} before the due date and {sub.after_due} after")
        double = f"; {self.double_percent:g} % of written answers graded twice" if self.double_percent else ""
        return f"{due}; {late}; {per_student}; submissions: {limits}{double}"


NO_POLICY = LessonPolicy()


@dataclass(frozen=True)
class LtiPolicy:
    """Who the LMS may let in, and as whom (`[lti]` in course.toml)."""

    contexts: tuple[str, ...] = ()
    """The LMS course ids (LTI context ids) this course is, beside the one its first instructor launch bound."""
    instructor_roles: tuple[str, ...] = ("Instructor",)
    """The context roles that open the instructor's side; institution and system roles never do."""
    roster: Path | None = None
    """A roster with an `email` column: an LMS user who shares no SIS id or login is matched on their full email."""


@dataclass(frozen=True)
class HubPolicy:
    """Who a JupyterHub's users are in this course (`[hub]` in course.toml; `grader serve --hub`)."""

    instructors: str = ""
    """The hub group whose members open the instructor's side."""
    students: str = ""
    """A hub group whose members are students (each under their hub name), beside the roster's."""
    roster: Path | None = None
    """A roster whose `hub_user` column names each student's hub user (else a hub user is the student of that id)."""


@dataclass(frozen=True)
class Course:
    """A course folder: its name, time zone and policy per lesson, and where its private state lives."""

    root: Path | None
    """The course folder; None where there is none (a student's machine: the packaged lessons only)."""
    name: str = ""
    timezone: str = "UTC"
    policies: tuple[tuple[str, LessonPolicy], ...] = ()
    declared: bool = False
    """Whether the folder has a course.toml (a folder given by --course may not)."""
    lti: LtiPolicy = LtiPolicy()
    hub: HubPolicy = HubPolicy()

    def policy(self, lesson_id: str) -> LessonPolicy:
        """The course's policy for a lesson (none declared: no due date, no late policy, variants as released)."""
        return dict(self.policies).get(lesson_id, NO_POLICY)

    @property
    def private(self) -> Path | None:
        """The course's private state folder (key, secret, per-student lessons), made 0700 when first written."""
        return self.root / PRIVATE if self.root is not None else None

    @property
    def label(self) -> str:
        """How the course is named to a person: its name and its folder."""
        if self.root is None:
            return "no course folder (the installed lessons)"
        return f"{self.name or self.root.name} ({self.root})"


def current() -> Course:
    """The course in force: `--course`/GRADER_COURSE, else the nearest course.toml above the working directory,
    else the checkout (read again whenever its course.toml changes)."""
    root = folders.course_home()
    if root is None:
        return Course(None)
    path = root / COURSE_FILE
    try:
        stamp = path.stat()
        key: tuple[Any, ...] = (stamp.st_mtime_ns, stamp.st_size, stamp.st_ino)
    except OSError:
        key = ()
    return _load(root, key)


def private_folder(course: Course | None = None) -> Path:
    """The course's private state folder, made (0700, whatever the umask) if it is not there; an existing one is
    kept to its owner (a group or others' access is taken away, said nowhere: it was never meant to be shared).
    Refused in one line where there is no course folder, or where the folder is a link."""
    course = course or current()
    if course.private is None:
        raise LessonError("no course folder here to keep the course's private state in: pass --course DIR (a folder "
                          f"with a {COURSE_FILE}) or run from inside one")
    folder = course.private
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    if folder.is_symlink() or not folder.is_dir():
        raise LessonError(f"{folder} is not a folder (a link or a file): the course's private state is kept in a "
                          "folder of its own")
    if folder.stat().st_mode & 0o077:
        folder.chmod(0o700)
    return folder


@functools.cache
def _load(root: Path, stamp: tuple[Any, ...]) -> Course:
    path = root / COURSE_FILE
    if not stamp:
        return Course(root, name=root.name)
    try:
        with path.open("rb") as handle:
            spec = tomllib.load(handle)
    except tomllib.TOMLDecodeError as err:
        raise LessonError(f"{path}: not valid TOML: {err}") from None
    except OSError as err:
        raise LessonError(f"{path}: cannot be read ({err.strerror or err})") from None
    error = SHAPE.first_error(spec)
    if error is not None:
        where = ".".join(str(step) for step in error.absolute_path) or "top level"
        if error.validator == "additionalProperties":
            raise LessonError(f"{path}: {where}: unknown key ({error.message.split('(')[-1].rstrip(')')})")
        raise LessonError(f"{path}: {where}: {error.message}")
    zone = str(spec["timezone"])
    try:
        _zone(zone)
    except LessonError:
        raise LessonError(f"{path}: timezone {zone!r} is not a time zone this machine knows (an IANA name: "
                          "Europe/Vienna, America/New_York, UTC)") from None
    policies = tuple((str(lesson_id), _policy(entry, zone, f"{path}: [lessons.{lesson_id}]"))
                     for lesson_id, entry in (spec.get("lessons") or {}).items())
    lti = spec.get("lti") or {}
    roster = (root / lti["roster"]) if lti.get("roster") else None
    hub = spec.get("hub") or {}
    return Course(root, str(spec["name"]), zone, policies, declared=True,
                  lti=LtiPolicy(tuple(lti.get("contexts") or ()),
                                tuple(lti.get("instructor_roles") or LtiPolicy.instructor_roles), roster),
                  hub=HubPolicy(str(hub.get("instructors", "")), str(hub.get("students", "")),
                                (root / hub["roster"]) if hub.get("roster") else None))


def late_rule(late: dict[str, Any] | None) -> LateRule | None:
    """The late rule `[lessons.<id>.late]` declares (None: lateness costs nothing)."""
    if late is None:
        return None
    cutoff = late.get("cutoff_days")
    return LatePolicy(float(late.get("percent_per_day", 0.0)), float(cutoff) if cutoff is not None else None)


def _policy(entry: dict[str, Any], zone: str, where: str) -> LessonPolicy:
    return LessonPolicy(
        due=_due(entry["due"], zone, where) if "due" in entry else None,
        late=late_rule(entry.get("late")),
        variants=entry.get("variants"),
        submissions=_submissions(entry.get("submissions") or {}),
        double_percent=float((entry.get("review") or {}).get("double_percent", 0.0)))


def _submissions(entry: dict[str, Any]) -> Submissions:
    """`[lessons.<id>.submissions]`, already schema-checked."""
    default = Submissions()
    return Submissions(cooldown_minutes=float(entry.get("cooldown_minutes", default.cooldown_minutes)),
                       max_graded=entry.get("max_graded", default.max_graded),
                       max_bytes=int(entry.get("max_bytes", default.max_bytes)),
                       before_due=str(entry.get("before_due", default.before_due)),
                       after_due=str(entry.get("after_due", default.after_due)),
                       send_grades=bool(entry.get("send_grades", default.send_grades)))


def _zone(name: str) -> _dt.tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise LessonError(f"unknown time zone {name!r}") from None


def _due(value: Any, zone: str, where: str) -> _dt.datetime:
    """A due date as a moment: with its own offset, else in the course's zone; a bare date is the end of that day."""
    if isinstance(value, _dt.datetime):
        when = value
    elif isinstance(value, _dt.date):
        when = _dt.datetime.combine(value + _dt.timedelta(days=1), _dt.time())
    elif isinstance(value, str):
        text = value.strip()
        try:
            when = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise LessonError(f"{where}: due {value!r} is not a time (write 2027-01-15T23:59:00, read in the course's "
                              f"time zone {zone}, or with its offset: 2027-01-15T23:59:00+01:00)") from None
        if len(text) == 10:  # a date alone: due by the end of that day
            when += _dt.timedelta(days=1)
    else:
        raise LessonError(f"{where}: due must be a time (2027-01-15T23:59:00), not {type(value).__name__}")
    return when if when.tzinfo is not None else when.replace(tzinfo=_zone(zone))


def moment(text: str, what: str) -> _dt.datetime:
    """An ISO 8601 time that names its offset (how submission times are recorded), or one line saying why not."""
    try:
        when = _dt.datetime.fromisoformat(str(text))
    except ValueError:
        raise LessonError(f"{what} {str(text)[:40]!r} is not a time") from None
    if when.tzinfo is None:
        raise LessonError(f"{what} {str(text)[:40]!r} names no time zone, so it cannot be compared with a due date")
    return when
