"""Render: reports, the batch dashboard and portfolios, from result data only.

One Jinja environment over `templates/`, autoescaped (student output is
untrusted HTML) with StrictUndefined. A report's template receives the typed
`GradeResult` (read from its JSON at the file edge, or the very record the JSON
is written from: `read_result(r.to_dict()) == r`, so a report shows only what
the signed JSON says) and a context of plain values derived from it. Measured,
simulated and as-submitted values stay in separate sections.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from grader.base import escape, host, spelling
from grader.base.errors import LessonError
from grader.base.shapes import mapping
from grader.intake import roster as class_list
from grader.judge import mistakes
from grader.lesson import catalog
from grader.lesson.folders import course_folder
from grader.report import absent, figure, manual_view
from grader.result.evidence import Evidence, Shown
from grader.result.record import INTERNAL_ERROR, GradeResult
from grader.run.decoded import Opaque


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja environment."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(course_folder("templates"))),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2"), default=True),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, bytecode_cache=_compiled("html"),
    )
    env.filters["num"] = spelling.value
    env.filters["points"] = spelling.score
    env.filters["plain"] = _plain_value
    env.filters["ticks"] = ticks
    return env


def _compiled(kind: str) -> jinja2.BytecodeCache | None:
    """Jinja's compiled templates, kept for this user between runs (compiling a report's templates is a tenth of a
    second of every batch, `grade` and `check`). Jinja checks each against its template's text; the file names
    carry this module's text and Jinja's version, which decide how a template compiles (an environment's options);
    the folder is private. Where there is none, templates compile as before."""
    folder = host.private_folder(host.cache_root() / "templates")
    if folder is None:
        return None
    stamp = hashlib.sha256(Path(__file__).read_bytes() + jinja2.__version__.encode()).hexdigest()[:16]
    return jinja2.FileSystemBytecodeCache(str(folder), f"__{kind}-{stamp}-%s.cache")


def ticks(text: Any) -> markupsafe.Markup:
    """A message written for Markdown and terminals, for a page: escaped, then each `code span` as <code>."""
    escaped = str(markupsafe.escape(str(text)))
    return markupsafe.Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped))


def _plain_value(value: Any, limit: int = 300) -> str:
    """A decoded value (evidence.Evidence) as short readable text: arrays as lists, floats to 6 places."""
    def walk(v: Any) -> Any:
        if hasattr(v, "tolist"):
            return walk(v.tolist())
        if isinstance(v, Opaque):
            return f"<{v.type_name}>"
        if isinstance(v, dict):
            return {str(walk(k)): walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        if isinstance(v, float):
            return round(v, 6)
        return v
    text = str(walk(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return spelling.value(value, 6)
    if hasattr(value, "tolist"):
        value = value.tolist()
    return _plain_value(value, 120) if not isinstance(value, str) else value


def _is_list(value: Any) -> bool:
    return (isinstance(value, list) or getattr(value, "ndim", 0) > 0) and not isinstance(value, str)


def _floats(value: Any) -> list[float]:
    flat = value.ravel().tolist() if hasattr(value, "ravel") else value
    return [float(v) for v in flat if isinstance(v, (int, float))]


def _table_of_dicts(rows: list[dict[str, Any]], lead: list[str] | None = None) -> dict[str, Any]:
    """Columns from the dicts' keys; list-valued keys become a count column and a collapsed list."""
    rows = [{str(k): v for k, v in row.items()} for row in rows]
    columns: list[str] = []
    listed: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in columns and key not in listed:
                (listed if _is_list(value) else columns).append(key)
    labels = lead or [f"{columns[0]} {_cell(row.get(columns[0], ''))}" if columns else str(i + 1)
                      for i, row in enumerate(rows)]
    body, samples = [], []
    for i, row in enumerate(rows):
        counts = []
        for key in listed:
            flat = _floats(row.get(key, []))
            counts.append(str(len(flat)))
            samples.append({"row": labels[i], "key": key, "count": len(flat),
                            "list": ", ".join(spelling.value(v, 6) for v in flat)})
        body.append(([lead[i]] if lead else []) + [_cell(row.get(key, "")) for key in columns] + counts)
    return {"kind": "table", "columns": (["input"] if lead else []) + columns + [f"{k} (count)" for k in listed],
            "rows": body, "samples": samples}


def _answer_view(answers: tuple[Shown, ...]) -> list[dict[str, Any]]:
    """Turn one exercise's public answers into tables and labelled values."""
    views: list[dict[str, Any]] = []
    pending: list[Shown] = []

    def flush() -> None:
        if pending:
            views.append(dict(_table_of_dicts([a.value for a in pending], [a.case for a in pending]),
                              title=pending[0].name))
            pending.clear()

    for a in answers:
        value = a.value if a.has_value else None
        if isinstance(value, dict):
            if pending and pending[0].name != a.name:
                flush()
            pending.append(a)
            continue
        flush()
        if a.raised:
            views.append({"kind": "value", "label": a.case, "value": f"raised {a.raised}", "note": a.note})
        elif not a.has_value:
            views.append({"kind": "value", "label": a.case, "value": "not defined", "note": ""})
        elif a.columns and isinstance(value, list) and a.args:
            views.append(_timeline(a, value))
        else:
            views.append({"kind": "value", "label": a.case, "value": _cell(value), "note": a.note})
    flush()
    return views


def _timeline(answer: Shown, value: list[Any]) -> dict[str, Any]:
    import numpy as np

    try:
        arrays = [np.asarray(answer.args[0], dtype=float).ravel()] + [np.asarray(v, dtype=float).ravel() for v in value]
    except (TypeError, ValueError):
        return {"kind": "value", "label": answer.case, "value": _cell(value), "note": ""}
    length = min(len(a) for a in arrays)
    rows = [[spelling.value(float(a[i]), 6) for a in arrays] for i in range(length)]
    return {"kind": "table", "title": answer.case, "columns": list(answer.columns), "rows": rows, "samples": []}


def report_context(result: GradeResult, draw: bool = True) -> dict[str, Any]:
    """Everything a report template needs, derived from the result data only.

    The values shown are the student's: one that cannot be drawn or tabled
    (a number too large for a float, a ragged list) costs that section, with
    a line saying so, never the report.
    """
    seen = Evidence()
    try:
        seen = Evidence.of(result)  # the student's values, decoded once for the tables and the figure
        context = _values_context(seen)
    except Exception as err:
        context = {"measured_values": [], "simulated_views": {}, "simulated_values": [], "measured_answers": {},
                   "unshown": f"the notebook's values could not be shown ({type(err).__name__}: {str(err)[:120]})"}
    context["figure"], context["figure_text"] = "", []
    context["manual"] = manual_view.view(result)
    context["replay"] = replay_command(result)
    context["receipt"] = RECEIPT
    context["measures"] = any(e.kind == "measured" for e in result.exercises)
    context["measured_names"] = [name for name, _ in result.measured.values or ()] if result.measured else []
    spec: dict[str, Any] = {}
    prose: dict[str, str] = {}
    if result.lesson and result.status == "graded":
        try:
            spec, prose = catalog.get(result.lesson).figure, catalog.get(result.lesson).report
        except LessonError:  # a report of an unknown lesson still renders, without the figure
            spec = {}
    context["figure_caption"] = str(spec.get("caption", ""))
    context["simulated_note"] = prose.get("simulated_values_note", "")
    context["figure_labels"] = [str(label) for label in spec.get("labels", ["simulated"])]
    context["comparison"] = None
    context["comparison_absent"] = ""
    context["comparison_note"] = prose.get("comparison_note", "")
    shown_apart = {str(name) for key, name in (spec.get("compare") or {}).items() if key in ("measured", "simulated", "context")}
    context["measured_values"] = [x for x in context["measured_values"] if x.get("title", x.get("label")) not in shown_apart]
    context["simulated_values"] = [x for x in context["simulated_values"] if x["label"] not in shown_apart]
    if spec:
        try:
            context["comparison"] = figure.comparison(seen, spec)
        except Exception as err:
            context["unshown"] = f"the comparison could not be computed from the notebook's values ({type(err).__name__}: {str(err)[:120]})"
        context["comparison_absent"] = absent.comparison_absent(result, spec, seen)
        absent.unmeasured(context, seen, spec)
        try:  # the Markdown report has no figure: drawing one for it would be wasted work
            drawn = figure.layout(seen, spec) if draw else None
            context["figure"] = environment().get_template("figure.svg.j2").render(f=drawn) if drawn else ""
            context["figure_text"] = [(panel.title, panel.said) for panel in drawn.panels] if drawn else []
            if drawn is not None and len(drawn.panels) < figure.planned_panels(spec):  # say what is drawn, only
                context["figure_caption"] = ("Drawn from this run's data: " + "; ".join(p.title for p in drawn.panels)
                                             + ". The lesson's other panels had no data on this run.")
        except Exception as err:
            context["unshown"] = f"the figure could not be drawn from the notebook's values ({type(err).__name__}: {str(err)[:120]})"
    return context


def replay_command(result: GradeResult) -> str:
    """The command that replays a grade's hidden cases, quoted for a shell whatever the file is called;
    "" where the result holds no seed to replay."""
    if result.seed is None or result.hash_seed is None:
        return ""
    submission, student = result.submission or "SUBMISSION", result.student or ""
    named = ["--student", student] if student and (result.numbers or Path(submission).stem != student) else []
    return escape.command(["grader", "grade", submission, "--lesson", result.lesson or "", *named,
                           "--seed", result.seed, "--hash-seed", result.hash_seed])


def _values_context(seen: Evidence) -> dict[str, Any]:
    measured_values = []
    for name, data in seen.values["measured"].items():
        if isinstance(data, list) and data and all(isinstance(d, dict) for d in data):
            measured_values.append(dict(_table_of_dicts(data), title=name))
        else:
            shown = _cell(data) if data is not None else "not defined"
            measured_values.append({"kind": "value", "label": name, "value": shown, "note": ""})
    simulated_views = {ex: _answer_view(answers) for ex, answers in seen.answers["simulated"].items()}
    simulated_values = [{"label": name, "value": _plain_value(value, 400) if value is not None else "not defined"}
                        for name, value in seen.values["simulated"].items()]
    return {"measured_values": measured_values, "simulated_views": simulated_views,
            "simulated_values": simulated_values, "measured_answers": seen.answers["measured"], "unshown": ""}


RECEIPT = (("CPU", "cpu_model"), ("cores", "cpu_count"), ("memory (bytes)", "memory_bytes"), ("OS", "os_release"),
           ("kernel", "os"), ("Python", "python"), ("JAX", "jax"), ("jaxlib", "jaxlib"),
           ("device asked for", "device_requested"), ("device used (seen working before the student's cells)", "device_used"),
           ("fell back to the CPU because", "device_fallback_reason"),
           ("JAX backend (reported by the kernel after the student's cells)", "jax_backend"),
           ("device (reported by the kernel)", "jax_device_kind"), ("devices (reported by the kernel)", "jax_device_count"),
           ("matmul precision (reported by the kernel)", "jax_matmul_precision"), ("grader", "grader"),
           ("grader commit", "grader_commit"), ("isolation", "isolation"), ("grading jobs at once", "jobs_at_once"))
"""The environment receipt, in the style of an inference benchmark's system description. What the kernel
reported after the student's cells is labelled so: the student's code could have changed it."""


def warm() -> None:
    """Compile the report and figure templates once, before workers fork: the pages and the parts they import or
    include (Jinja compiles those only when a page is first drawn, which would be once in every worker); and the
    class's pages, which a batch draws after its last grade, when nothing else overlaps their compiling."""
    for name in ("report.html.j2", "figure.svg.j2", "_views.html.j2", "_style.css.j2", "dashboard.html.j2",
                 "similarity.html.j2"):
        environment().get_template(name)
    markdown_environment().get_template("report.md.j2")


def report_html(result: GradeResult) -> str:
    """The evidence report of one result, as a self-contained HTML page."""
    return environment().get_template("report.html.j2").render(r=result, v=report_context(result))


def report_md(result: GradeResult) -> str:
    """The evidence report of one result, as Markdown."""
    return markdown_environment().get_template("report.md.j2").render(r=result, v=report_context(result, draw=False))


@functools.lru_cache(maxsize=1)
def markdown_environment() -> jinja2.Environment:
    """The Jinja environment of Markdown pages: every value shown as written (escape.md_text), never as HTML
    entities; `code` makes a value inline code that its own backticks cannot end."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(course_folder("templates"))), autoescape=False,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, bytecode_cache=_compiled("md"),
        finalize=lambda value: value if isinstance(value, markupsafe.Markup) else escape.md_text(value))
    env.filters.update(environment().filters)
    env.filters["code"] = lambda value: markupsafe.Markup(escape.md_code(" ".join(str(value).splitlines())))
    env.filters["cells"] = lambda values: markupsafe.Markup(" | ".join(escape.md_text(v) for v in values))
    return env


def dashboard_data(results: list[dict[str, Any]], lesson: Any, absent: list[dict[str, Any]] | tuple[()] = (),
                   changes: list[Any] | None = None, similar: Any = None) -> dict[str, Any]:
    """Aggregates for the batch dashboard: distribution, pass rates, top failures, problem students. `results` are
    the gradebook's summaries (gradebook.summary)."""
    from collections import Counter

    # the class is the roster's where there is one: a student outside it (a platform's test student, dropped on
    # purpose) is listed apart, never counted in the class's figures
    graded = [r for r in results if r["status"] == "graded" and r.get("on_roster") is not False]
    max_score = lesson.max_score
    bins = Counter(int(math.floor(r["score"] + 1e-9)) for r in graded)
    fractional = {int(math.floor(r["score"] + 1e-9)) for r in graded if abs(r["score"] - round(r["score"])) > 1e-9}
    distribution = [{"score": f"{s} to <{s + 1}" if s in fractional else str(s), "count": bins.get(s, 0)}
                    for s in range(int(max_score) + 1)]
    exercises = []
    grouped = mistakes.grouped(graded)
    for ex in lesson.exercises:
        verdicts = [e for r in graded for e in r["exercises"] if e["id"] == ex.id]
        passed = sum(1 for e in verdicts if e["status"] == "passed")
        exercises.append({"id": ex.id, "kind": ex.kind, "passed": passed, "total": len(verdicts),
                          "rate": passed / len(verdicts) if verdicts else 0.0,
                          "statuses": dict(Counter(e["status"] for e in verdicts)),
                          "mistakes": grouped.get(ex.id, [])})
    trouble = [{"student": r["student"], "statuses": sorted({e["status"] for e in r["exercises"]} & {"error", "timeout"})}
               for r in graded if any(e["status"] in ("error", "timeout") for e in r["exercises"])]
    failures = [r for r in results if (r.get("error") or "").startswith(INTERNAL_ERROR)]
    return {"lesson": lesson.id, "title": lesson.title, "count": len(results), "graded": len(graded),
            "rejected": [r for r in results if r["status"] != "graded" and r not in failures],
            "failures": failures,
            "unisolated": [r["student"] for r in graded if r.get("isolated") is False],
            "hosts": Counter(r["host"] for r in graded if r.get("host")).most_common(),
            "devices": Counter(r["device"] for r in graded if r.get("device")).most_common(),
            "differing": [{"student": r["student"], "count": r["differing_outputs"]} for r in graded
                          if r.get("differing_outputs")],
            "mean": sum(r["score"] for r in graded) / len(graded) if graded else 0.0, "max_score": max_score,
            "distribution": distribution, "peak": max([int(str(d["count"])) for d in distribution] or [1]) or 1,
            "exercises": exercises, "trouble": trouble,
            "absent": list(absent), "outside": [r["student"] for r in results if r.get("on_roster") is False],
            "late": [r["student"] for r in results if r.get("late")],
            "foreign": [(r["student"], r["handout_of"]) for r in results if r.get("handout_of")],
            "regraded": changes is not None, "changes": list(changes or []),
            "similar": None if similar is None else _similar(similar),
            "exercise_ids": [ex.id for ex in lesson.exercises],
            "students": [{"student": r["student"], "name": r.get("name") or "", "status": r["status"], "score": r.get("score", 0),
                          "max_score": r.get("max_score", max_score), "error": r.get("error"),
                          "by_exercise": {e["id"]: e["status"] for e in r.get("exercises") or []},
                          **_manual_cells(r)} for r in results]}


def _manual_cells(r: dict[str, Any]) -> dict[str, Any]:
    """A dashboard row's instructor's part, from its gradebook summary."""
    part = mapping(r, "manual")
    return {"pending": None in mapping(part, "written").values(), "penalty": part.get("penalty"),
            "late_percent": part.get("late_percent"),
            "overrides": {e["id"]: e["override"] for e in r.get("exercises") or [] if e.get("override")}}


DASHBOARD_PAIRS = 50
"""Flagged pairs listed on the dashboard (similarity.html shows more, `grader similarity --json` all)."""


def _similar(report: Any) -> dict[str, Any]:
    pairs = [{"kind": kind, "students": p.students, "score": p.score, "shared": p.shared}
             for kind in ("code", "prose") for p in getattr(report, kind) if p.flagged]
    return {"threshold": report.threshold, "pairs": pairs[:DASHBOARD_PAIRS], "more": len(pairs) - DASHBOARD_PAIRS}


def dashboard_html(results: list[dict[str, Any]], lesson: Any, absent: list[dict[str, Any]] | tuple[()] = (),
                   changes: list[Any] | None = None, similar: Any = None, agreement: Any = None) -> str:
    """The instructor's batch dashboard (`OUTDIR/index.html`); after a regrade, with what it changed; with the
    pairs of similar work flagged for review (similarity.Report), where it was computed; with the graders'
    agreement on the answers graded twice (judge/agreement.Agreement), where there are any."""
    data = dashboard_data(results, lesson, absent, changes, similar) | {"agreement": agreement}
    names = {str(r["student"]): str(r["name"]) for r in [*results, *absent] if r.get("name")}
    return environment().get_template("dashboard.html.j2").render(d=data, who=lambda student: class_list.who(names, student))



def portfolio_index(students: list[str], entries: list[dict[str, Any]], keys: list[str] | None = None) -> str:
    """The portfolio's index page (with the fingerprints of the keys that signed its results)."""
    return environment().get_template("portfolio/index.html.j2").render(students=students, entries=entries,
                                                                         keys=keys or [])
