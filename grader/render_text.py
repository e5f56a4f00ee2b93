"""Results as plain text for a terminal: `grader check`, `grader grade` and `grader validate` print these, and
the platforms' feedback files carry them."""

from __future__ import annotations

from typing import Any

from grader.render import points

MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "missing": "MISSING", "timeout": "TIMEOUT"}
LEGEND = ("PASS every case matched · FAIL an answer differs (shown above) · ERROR your code raised, or a cell "
          "before it did · MISSING a name the exercise needs is not defined · TIMEOUT it ran past its time limit")


def result_text(result: dict[str, Any]) -> str:
    """A result for the terminal, the same for `grade`, `check` and a batch's students: the score, each
    exercise with what to fix, the notes, and what the statuses mean."""
    check = result.get("mode") == "check"
    if result.get("status") != "graded":
        who = " · ".join(str(x) for x in (result.get("student"), result.get("lesson")) if x)
        return f"{who}: not graded: {result.get('error') or 'no reason was recorded'}"
    if check:
        head = f"Self-check of {result.get('submission')} for lesson {result['lesson']} (public checks only)"
    else:
        head = (f"{result['student']} · {result['lesson']}: {points(result['score'])} / {points(result['max_score'])}"
                f" (seed {result.get('seed')}, hash seed {result.get('hash_seed')})")
    lines = [head, ""]
    lines += [f"note: {note}" for note in result.get("notes", [])]
    if result.get("as_submitted"):
        lines.append(f"note: {len(result['as_submitted'])} stored output(s) differ from the fresh run "
                     "(the report shows both; only the fresh run counts)")
    for e in result["exercises"]:
        lines.append(f"{MARKS[e['status']]:<8} {e['id']:<20}" + ("" if check else f" {points(e['score'])}/{points(e['max_score'])}"))
        if e["status"] != "passed":
            lines += [f"         {m}" for m in e["messages"]]
    passed = sum(1 for e in result["exercises"] if e["status"] == "passed")
    lines.append("")
    if check:
        lines.append(f"{passed} of {len(result['exercises'])} exercises pass the public checks. "
                     "Hidden cases are drawn when your notebook is graded.")
    lines.append(LEGEND)
    return "\n".join(lines)


def validation_text(outcome: Any) -> str:
    """What `grader validate` prints."""
    ref, bare = outcome.reference, outcome.scaffold
    ref_passed = sum(1 for e in ref.exercises if e.status == "passed")
    bare_passed = sum(1 for e in bare.exercises if e.status == "passed")
    lines = [f"lesson {outcome.lesson}",
             f"reference: {ref_passed}/{len(ref.exercises)} passed (score {ref.score:g}/{ref.max_score:g}, seed {ref.seed})",
             f"scaffold: {bare_passed} passed (score {bare.score:g}/{bare.max_score:g})",
             "nothing crashed: both notebooks were graded to the end"]
    if outcome.problems:
        lines.append("UNSOUND:")
        lines += [f"  - {p}" for p in outcome.problems]
    else:
        lines.append("sound")
    return "\n".join(lines)
