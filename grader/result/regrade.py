"""Regrade: every submission graded again with the seeds its result recorded, and what that changed.

`grader batch --regrade` grades each submission again even when nothing of it
changed: after a fix to a lesson's reference or a hidden case, the grade must
follow. Each student keeps the hidden-case seed and the hash seed of their
recorded result, so freshly drawn cases never move a grade by chance (the
batch's warm template runs with the hash seed most results recorded; a
student recorded with another one gets a kernel started with theirs). The
gradebook's row holds the new grade and the replaced ones move to its history
table; `changes.csv`, the summary and the dashboard say who moved, from what
to what, per exercise, and which digest (lesson, reference, submission) changed.
Seeds are replayed only from results that can be trusted (`trusted`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import escape, files, spelling
from grader.base.options import MAX_HASH_SEED, MAX_SEED, Options
from grader.lesson.draw import Given

DIGESTS = ("lesson", "reference", "submission")


def trusted(recorded: dict[str, dict[str, Any]], public_key: Any = None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(the recorded results whose seeds a regrade may replay, the students whose seeds it may not).

    A seed is replayed only as `--seed` would take it (an int within MAX_SEED, a hash seed within
    MAX_HASH_SEED) and, where the course key is at hand, only from a result whose signature still holds: an edit
    to the gradebook cannot choose a student's hidden cases or kill their kernel. Such a student is graded with a
    freshly derived seed instead, and the regrade names them."""
    from grader.result import sign

    kept, refused = {}, []
    for student, data in recorded.items():
        if data.get("status") != "graded":
            continue
        bounded = _bounded(data.get("seed"), MAX_SEED) and _bounded(data.get("hash_seed"), MAX_HASH_SEED)
        intact = public_key is None or sign.check(data, public_key)[0] == "intact"
        if bounded and intact:
            kept[student] = data
        else:
            refused.append(student)
    return kept, sorted(refused)


def batch_hash_seed(recorded: dict[str, dict[str, Any]]) -> int | None:
    """The hash seed most recorded results were graded with (the template's), or None when none is recorded."""
    seeds = Counter(data.get("hash_seed") for data in recorded.values() if isinstance(data.get("hash_seed"), int))
    return seeds.most_common(1)[0][0] if seeds else None


def replayed(options: Options, base: Given, recorded: dict[str, Any] | None) -> tuple[Options, Given]:
    """A student's part of a regrade: what their recorded result fixes of their draw (its seeds, over `base`, the
    class's: the template's hash seed), and how to run it (a kernel of its own, not one forked from the template,
    when their hash seed is not the template's)."""
    if not recorded or recorded.get("status") != "graded":
        return options, base
    seed, hash_seed = recorded.get("seed"), recorded.get("hash_seed")
    given = Given(seed, str(recorded.get("seed_from") or "given"), base.hash_seed) if isinstance(seed, int) else base
    if isinstance(hash_seed, int):
        given = dataclasses.replace(given, hash_seed=hash_seed)
    if given.hash_seed != base.hash_seed:
        options = dataclasses.replace(options, zygote=False)
    return options, given


@dataclass(frozen=True)
class Change:
    """One student whose grade a regrade moved."""

    student: str
    before: float | None
    after: float | None
    max_score: float | None
    exercises: tuple[str, ...]
    """`id: before -> after`, marked `(measured)` for an exercise graded on what was measured while grading."""
    digests: tuple[str, ...]
    """Which of DIGESTS differ between the two grades."""
    graded_before: str
    graded_after: str

    def line(self) -> str:
        return (f"{self.student} {_score(self.before)} -> {_score(self.after)}"
                + (f" ({'; '.join(self.exercises)})" if self.exercises else ""))


def _score(value: Any) -> str:
    return spelling.score(value) if isinstance(value, (int, float)) else "rejected"


def _graded_score(data: dict[str, Any]) -> float | None:
    return data.get("score") if data.get("status") == "graded" else None


def _exercise_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, ...]:
    old = {e["id"]: e for e in before.get("exercises") or []}
    lines = []
    for new in after.get("exercises") or []:
        was = old.get(new["id"], {})
        if (was.get("score"), was.get("status")) != (new["score"], new["status"]):
            mark = " (measured)" if new.get("kind") == "measured" else ""
            lines.append(f"{new['id']}: {was.get('status', 'absent')} {_score(was.get('score'))} -> "
                         f"{new['status']} {_score(new['score'])}{mark}")
    return tuple(lines)


def changes(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Change]:
    """The students whose grade moved (score, status or an exercise's verdict), from (before, after) pairs."""
    moved = []
    for before, after in pairs:
        exercises = _exercise_changes(before, after)
        if _graded_score(before) == _graded_score(after) and before.get("status") == after.get("status") and not exercises:
            continue
        old, new = before.get("digests") or {}, after.get("digests") or {}
        moved.append(Change(str(after.get("student")), _graded_score(before), _graded_score(after), after.get("max_score"), exercises,
                            tuple(k for k in DIGESTS if old.get(k) != new.get(k)),
                            str(before.get("graded_at") or ""), str(after.get("graded_at") or "")))
    return moved


def write_csv(moved: list[Change], path: str | Path, names: dict[str, str] | None = None) -> None:
    """`changes.csv`: one row per student whose grade a regrade moved (beside `grades.csv`), with their name where
    the roster gives one."""
    names = names or {}
    rows: list[list[Any]] = [["student", "name", "before", "after", "max_score", "exercises changed", "digests changed",
                              "graded before", "graded after"]]
    rows += [[c.student, names.get(c.student, ""), _score(c.before), _score(c.after), c.max_score,
              "; ".join(c.exercises), ", ".join(c.digests), c.graded_before, c.graded_after] for c in moved]
    files.write_text(path, escape.csv_text(rows))


def _bounded(value: object, largest: int) -> bool:
    """Whether a recorded seed is one `--seed` would take: an int (not a bool) in 0..largest."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= largest
