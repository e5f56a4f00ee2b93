"""What a report says is absent on this run, rather than showing something it is not: a side of the comparison the
notebook left undefined (and the verdicts that explain it), and measured values where nothing was measured.
"""

from __future__ import annotations

from typing import Any

from grader.report import figure
from grader.result.evidence import Evidence
from grader.result.record import GradeResult


def unmeasured(context: dict[str, Any], seen: Evidence, spec: dict[str, Any]) -> None:
    """Where the lesson's timings (`[figure] timings`) were not taken on this run, no other value is shown as
    measured: what stands there is the given code's fallback, not a timing."""
    timings = str(spec.get("timings") or "")
    if not timings or timings not in seen.values.get("measured", {}) or seen.values["measured"][timings]:
        return
    context["measured_values"] = [
        dict(x, value=f"not measured on this run (`{timings}` is undefined or empty; what the notebook holds is a "
                      "fallback, not a timing)", note="") if x.get("kind") == "value" and x.get("label") != timings
        else x for x in context["measured_values"]]


def comparison_absent(result: GradeResult, spec: dict[str, Any], seen: Evidence | None = None) -> str:
    """Why the lesson's measured-beside-simulated comparison is missing a side on this run ("" when it is whole):
    which values the notebook left undefined, and the verdicts that explain it."""
    compare = spec.get("compare") or {}
    if not compare or result.status != "graded":
        return ""
    seen = seen if seen is not None else Evidence.of(result)
    lacking = [str(compare[side]) for side in figure.SIDES
               if compare.get(side) and not isinstance(seen.value(side, str(compare[side])), dict)]
    if not lacking:
        return ""
    excused = [m for e in result.exercises for m in e.messages if "not compared on this run" in m]
    failing = [f"{e.id} ({e.status})" for e in result.exercises if e.status != "passed"]
    why = (f"No {'table or figure' if len(lacking) == len(figure.SIDES) else 'complete table'} of "
           f"{compare.get('title') or 'the comparison'} on this run: the notebook left "
           f"{' and '.join(f'`{name}`' for name in lacking)} undefined (the given comparison cell builds them from "
           "the live records, the fitted costs and the simulation)")
    if excused:
        return f"{why}. {excused[0][0].upper()}{excused[0][1:]}"
    if failing:
        return f"{why}. Exercises not passing: {', '.join(failing)}"
    return why
