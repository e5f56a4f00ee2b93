"""Results as plain text for a terminal: `grader check`, `grader grade` and `grader validate` print these, and
the platforms' feedback files carry them; a batch's progress and its closing summary too."""

from __future__ import annotations

import sys
import textwrap
import time
from typing import TYPE_CHECKING, Any

from grader.base import escape
from grader.base.spelling import score as points
from grader.intake.roster import who

if TYPE_CHECKING:
    from grader.result.record import GradeResult

MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "missing": "MISSING", "timeout": "TIMEOUT"}
LEGEND = ("PASS every case matched · FAIL an answer differs (shown above) · ERROR your code raised, or a cell "
          "before it did · MISSING a name the exercise needs is not defined · TIMEOUT it ran past its time limit")


def result_text(result: GradeResult) -> str:
    """A result for the terminal, the same for `grade`, `check` and a batch's students: the score, each
    exercise with what to fix, the notes, and what the statuses mean."""
    check = result.mode == "check"
    arrived = result.submitted_as
    student = who({result.student: arrived.name if arrived else ""}, result.student) if result.student else ""
    if result.status != "graded":
        whose = " · ".join(str(x) for x in (student, result.lesson) if x)
        return f"{whose}: not graded: {result.error or 'no reason was recorded'}"
    if check:
        head = f"Self-check of {result.submission} for lesson {result.lesson} (public checks only)"
    else:
        head = (f"{student} · {result.lesson}: {points(result.score)} / {points(result.max_score)}"
                f" (seed {result.seed}, hash seed {result.hash_seed})")
    lines = [head, ""]
    lines += [f"note: {note}" for note in result.notes]
    if result.as_submitted:
        lines.append(f"note: {len(result.as_submitted)} stored output(s) differ from the fresh run "
                     "(the report shows both; only the fresh run counts)")
    for e in result.exercises:
        lines.append(f"{MARKS[e.status]:<8} {e.id:<20}" + ("" if check else f" {points(e.score)}/{points(e.max_score)}"))
        if e.status != "passed":
            lines += [f"         {m}" for m in e.messages]
    lines += _manual_lines(result)
    passed = sum(1 for e in result.exercises if e.status == "passed")
    lines.append("")
    if check:
        lines.append(f"{passed} of {len(result.exercises)} exercises pass the public checks. "
                     "Hidden cases are drawn when your notebook is graded.")
    lines.append(LEGEND)
    return "\n".join(lines)


def _manual_lines(result: GradeResult) -> list[str]:
    """The instructor's part, for the terminal and a platform's comment: overrides, written answers, lateness."""
    from grader.report import manual_view

    shown = manual_view.view(result)
    if shown is None:
        return []
    lines = [f"OVERRIDE {o.exercise:<20} {points(o.autograded)} -> {points(o.score)}: {o.reason}"
             for o in shown["overrides"]]
    for w in shown["written"]:
        got = "not graded yet" if w["points"] is None else f"{points(w['points'])}/{points(w['max_points'])}"
        lines.append(f"WRITTEN  {got}: {w['question']}")
        lines += [f"           {applied}" for applied in w["applied"]]  # the rubric items, as the report lists them
        if w["comment"]:
            lines.append(f"           comment: {w['comment']}")
    late = shown["late"]
    if late:
        lines.append(f"LATE     {points(late.days)} day(s): -{points(late.percent)}%, "
                     f"{points(late.points)} of {points(shown['before_penalty'])} points")
    return lines


def validation_text(outcome: Any) -> str:
    """What `grader validate` prints."""
    ref, bare = outcome.reference, outcome.scaffold
    ref_passed = sum(1 for e in ref.exercises if e.status == "passed")
    bare_passed = sum(1 for e in bare.exercises if e.status == "passed")
    lines = [f"lesson {outcome.lesson}",
             f"reference: {ref_passed}/{len(ref.exercises)} passed (score {points(ref.score)}/{points(ref.max_score)}, seed {ref.seed})",
             f"scaffold: {bare_passed} passed (score {points(bare.score)}/{points(bare.max_score)})",
             "nothing crashed: both notebooks were graded to the end"]
    caught = getattr(outcome, "proof", ())
    if caught:
        lines.append("declared mistakes: " + ("every declared mistake is caught under every seed"
                                              if all(c.caught == c.seeds for c in caught) else "not all caught"))
        lines += [f"  {c.line()}" for c in caught]
    if outcome.problems:
        lines.append("UNSOUND:")
        lines += [f"  - {p}" for p in outcome.problems]
    else:
        lines.append("sound")
    return "\n".join(lines)


class Progress:
    """A batch's progress on stderr: a bar on a terminal, a line per submission otherwise."""

    def __init__(self, total: int, stream: Any = None) -> None:
        stream = stream or sys.stderr  # looked up now: the caller may have redirected it
        self.total, self.done, self.start, self.stream = total, 0, time.monotonic(), stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def step(self, student: str, result: GradeResult) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        what = (f"{points(result.score)}/{points(result.max_score)}" if result.status == "graded"
                else textwrap.shorten(f"rejected: {result.error or ''}", 100, placeholder=" ..."))
        name = result.submitted_as.name if result.submitted_as else ""
        who = f"{name} ({student})" if name else student  # the roster's name where it gives one
        if self.tty:
            width = 30
            filled = int(width * self.done / max(1, self.total))
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                              f"ETA {eta:5.0f} s  {escape.terminal(who[:24]):<24} "
                              f"{escape.terminal(textwrap.shorten(what, 40, placeholder=' ...')):<40}")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(escape.terminal(f"graded {self.done}/{self.total} {who} {what} (eta {eta:.0f} s)") + "\n")
        self.stream.flush()


def report_line(summary: Any) -> str:
    """The summary for the terminal: one line of counts, then who is behind each problem count."""
    c = summary.counts
    line = (f"{summary.total} submissions: {c.get('graded', 0)} graded, {c.get('rejected', 0)} rejected, "
            f"{summary.skipped} already recorded; {c.get('errors', 0)} with errors, {c.get('timeouts', 0)} with timeouts; "
            f"{summary.seconds:.1f} s; parent peak memory {summary.peak_mb:.0f} MB"
            + (f"; {c['failures']} failed inside the grader (rerun to retry them)" if c.get("failures") else "")
            + ("" if c.get("signed") else "; results unsigned (no course key: grader keys init)"))
    line = f"class layout: {summary.layout}\n" + line
    if summary.ignored:
        shown = ", ".join(summary.ignored[:10]) + (f" and {len(summary.ignored) - 10} more" if len(summary.ignored) > 10 else "")
        line += f"\n  ignored (not submissions): {shown}"
    labels = {"errors": "with errors", "timeouts": "with timeouts", "rejected": "rejected",
              "failures": "grader failures (rerun to retry)", "missing": "on the roster, no submission",
              "outside": "not on the roster", "changed": "grades the regrade moved (changes.csv)",
              "moved": "recorded grades the course's policy, the roster or the review now moves (joined again, "
                       "nothing rerun)",
              "foreign": "another student's handout (graded on the student's own numbers)",
              "untrusted": "recorded seeds not trusted (edited or unsigned), graded with freshly derived seeds",
              "unsigned": "recorded unsigned, before the course key (sign them: rerun with --regrade)"}
    if "changed" in summary.named and not summary.named["changed"]:
        line += "\n  the regrade moved no grade: every recorded grade stands (changes.csv is empty)"
    for key, label in labels.items():
        names = summary.named.get(key, [])
        if names:
            people = names if key in ("changed", "moved", "foreign") else [who(getattr(summary, "names", {}), n) for n in names]
            shown = ", ".join(people[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
            line += f"\n  {label}: {shown}"
    return line



def course_text(state: Any) -> str:
    """`grader course`: the course, where each piece of its private state lives, and its policy per lesson."""
    lines = [f"course: {state.label}",
             f"policy: {state.declared or 'no course.toml (no due dates, no late policy)'}; time zone {state.timezone}"]
    if state.private is not None:
        held = f"mode {state.private_mode}" if state.private_mode else "not made yet"
        lines.append(f"private state: {state.private} ({held}; never handed out, packaged or committed)")
    for piece in state.pieces:
        where = f"{piece.path}" if piece.path else "none"
        detail = f"; {piece.detail}" if piece.detail else ""
        lines.append(f"  {piece.what}: {where} ({piece.whose}){detail}")
    lines += list(state.lms)
    lines.append("lessons:")
    for item in state.lessons:
        graded = "graded per student" if item.per_student else "graded on the seed's numbers"
        lines.append(f"  {item.lesson}: {item.policy} ({graded}: {item.why})")
    return escape.terminal("\n".join(lines))


def steadiness_text(held: Any) -> str:
    """`validate --under-load`: each notebook's scores over its runs, then whether any point moved."""
    lines = [f"{held.lesson}: graded beside {held.busy} busy processes"]
    for graded in held.notebooks:
        totals = ", ".join(points(t) for t in graded.totals)
        lines.append(f"  {graded.label}: {totals}" + ("" if graded.moved else " (the same every run)"))
    lines += [f"  moved: {problem}" for problem in held.problems]
    lines.append("steady: no score moved with the load" if not held.problems else "unsteady: noise decides points")
    return escape.terminal("\n".join(lines))
