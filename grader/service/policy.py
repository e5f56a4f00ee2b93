"""The course's submission policy as the service applies it: who may be graded now, and what a student is shown.

`[lessons.<id>.submissions]` in course.toml (course.Submissions): a cooldown
between graded submissions and a most-graded count (a submission taken inside
either is saved, never lost, and not graded: the answer is 429 with
`Retry-After` where waiting helps); what a student sees before the due date
and after it (`public`: the public checks only, `verdicts`: each exercise's
verdict too, `score`: the score and the report as well). A lesson with no due
date shows what `after_due` says. The grader's own failures never cost an
attempt (jobs.Queue.graded_since counts only what was graded or waits to be).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Any

from grader.lesson import course
from grader.result.record import GradeResult
from grader.service.jobs import SHOWN, Job, Queue


@dataclass(frozen=True)
class Admission:
    """Whether a submission is graded, or only saved, and why."""

    graded: bool
    why: str = ""
    retry_after: int | None = None
    """Seconds until the cooldown ends (None: waiting does not help)."""
    used: int = 0
    """Graded submissions of the lesson this student has used, this one included where it is graded."""
    of: int | None = None
    """The course's limit of graded submissions (`max_graded`), or None: no limit."""

    def header(self) -> dict[str, str]:
        """The `Graded-Submissions` header beside a receipt (`used=1; of=4`, or `used=1` without a limit): the
        receipt's body stays the contract's five fields."""
        return {"Graded-Submissions": f"used={self.used}" + (f"; of={self.of}" if self.of is not None else "")}


def admit(queue: Queue, lesson_id: str, student: str, now: float) -> Admission:
    """Whether this student's new submission of the lesson is graded now (else it is saved only)."""
    count, last = queue.graded_since(lesson_id, student)
    return decide(lesson_id, count, last, now)


def decide(lesson_id: str, count: int, last: float | None, now: float) -> Admission:
    """The admission of a submission arriving at `now`, given the student's graded submissions of the lesson so far
    (`count`, the latest received at `last`): the course's limit and cooldown decide."""
    limits = course.current().policy(lesson_id).submissions
    of = limits.max_graded
    if of is not None and count >= of:
        return Admission(False, f"saved, not graded: all {of} graded submissions of {lesson_id} are used", None,
                         count, of)
    if last is not None and limits.cooldown_minutes > 0:
        wait = last + limits.cooldown_minutes * 60 - now
        if wait > 0:
            return Admission(False, f"saved, not graded: graded submissions of {lesson_id} are {limits.cooldown_minutes:g} "
                                    f"min apart, so this copy is kept but not graded; submit again in {math.ceil(wait)} "
                                    "s to have it graded", math.ceil(wait), count, of)
    return Admission(True, used=count + 1, of=of)


def level(lesson_id: str, now: dt.datetime | None = None) -> str:
    """What a student sees of a graded submission of this lesson now: `public`, `verdicts` or `score`."""
    policy = course.current().policy(lesson_id)
    now = now or dt.datetime.now(dt.UTC)
    before = policy.due is not None and now < policy.due
    return policy.submissions.before_due if before else policy.submissions.after_due


def scores_shown_from(lesson_id: str, now: dt.datetime | None = None) -> float:
    """When students may see their scores of this lesson (a POSIX time): the due date where the course shows less
    before it (`before_due`) and it is still ahead, else now (0.0). A grade is sent to the LMS no earlier."""
    policy = course.current().policy(lesson_id)
    now = now or dt.datetime.now(dt.UTC)
    if policy.due is not None and now < policy.due and policy.submissions.before_due != "score":
        return policy.due.timestamp()
    return 0.0


def verdicts(result: GradeResult) -> str:
    """What a graded submission's feedback is made from, kept with its job (JSON): each exercise's verdict, its
    public cases and how many hidden cases passed; hidden answers are never kept."""
    late = result.manual.late.to_dict() if result.manual is not None and result.manual.late else None
    exercises = [{"id": e.id, "status": e.status, "score": e.score, "max_score": e.max_score, "kind": e.kind,
                  "messages": list(e.messages[:6]), "public_messages": _public_messages(e),
                  "public": [{"label": c.label, "outcome": c.outcome, "message": c.message} for c in e.cases
                             if not c.hidden],
                  "hidden": [sum(c.outcome == "passed" for c in e.cases if c.hidden), sum(c.hidden for c in e.cases)]}
                 for e in result.exercises]
    written = [{"question": w.question, "points": w.points, "max_points": w.max_points}
               for w in (result.manual.written if result.manual is not None else ())]
    return json.dumps({"status": result.status, "error": result.error, "late": late, "exercises": exercises,
                       "written": written})


def _public_messages(exercise: Any) -> list[str]:
    """What a student may read of an exercise before the due date: the messages of its public cases, never a
    hidden case's input or the answer given to it (a student could fit that one case attempt by attempt); an
    exercise that could not be judged case by case keeps its own messages, which speak of no case."""
    if not exercise.cases:
        return list(exercise.messages[:6])
    said = [c.message for c in exercise.cases if not c.hidden and c.outcome != "passed" and c.message][:5]
    hidden = [c for c in exercise.cases if c.hidden]
    if hidden:
        said.append(f"{sum(c.outcome == 'passed' for c in hidden)} of {len(hidden)} hidden cases passed")
    return said


def shown(job: Job, seen_by: str, report: bool = False) -> dict[str, Any]:
    """A submission as its student (or an instructor: `seen_by`) is shown it: the state, and once done, the
    feedback the course's policy allows now."""
    data: dict[str, Any] = {"id": job.id, "lesson": job.lesson, "status": SHOWN[job.state], "sha256": job.sha256,
                            "name": job.name, "received_at": job.received_at}
    if seen_by == "instructor":
        # where it was graded: the server (host:pid of the server) and its lesson host, not a worker's process id
        data.update(student=job.student, state=job.state, tries=job.tries, pid=job.pid,
                    graded_on=(job.worker or "").rsplit("/", 1)[0].rsplit(":", 1)[0])
    if job.state in ("failed", "dead"):
        data["error"] = "the grader could not grade it (not counted against you): " + (job.error or "unknown")
    if job.state == "superseded":
        data["error"] = f"not graded: a newer submission ({job.superseded_by}) replaced it in the queue"
    if job.state == "saved":
        data["error"] = "saved, not graded (the cooldown or the limit of graded submissions)"
    if job.state != "done":
        return data
    what = "score" if seen_by == "instructor" else level(job.lesson)
    feedback = json.loads(job.feedback or "{}")
    data.update(score=job.score if what == "score" else None, max_score=job.max_score if what == "score" else None,
                graded=job.status, shows=what)
    if job.status != "graded":
        data["error"] = job.error
        return data
    data["exercises"] = [_exercise(e, what) for e in feedback.get("exercises", [])]
    data["written"] = [{"question": w.get("question"), "max_points": w.get("max_points"),
                        "graded": w.get("points") is not None} for w in feedback.get("written", [])]
    if what == "score":
        data["late"] = feedback.get("late")
        data["report"] = f"/api/submissions/{job.id}/report" if report else None
    return data


def _exercise(e: dict[str, Any], what: str) -> dict[str, Any]:
    shown_: dict[str, Any] = {"id": e.get("id"), "public": e.get("public", [])}
    if what == "verdicts":  # hidden cases counted, never shown (a row kept before public_messages: filtered)
        said = e.get("public_messages")
        if not isinstance(said, list):
            said = [m for m in e.get("messages", []) if "hidden case" not in str(m)]
        shown_.update(status=e.get("status"), messages=said, hidden_passed=e.get("hidden"))
    if what == "score":
        shown_.update(status=e.get("status"), messages=e.get("messages", []), hidden_passed=e.get("hidden"))
    if what == "score":
        shown_.update(score=e.get("score"), max_score=e.get("max_score"))
    return shown_
