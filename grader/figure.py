"""The lesson's figure as inline SVG, drawn from one result's data with matplotlib.

Panels, each optional, described by the lesson's `[figure]` table:
`timings` names a measured list of timing reports (p50/p95 per batch, with the
sample count written beside each point); `series` names simulated response
vectors, divided by the measured value named by `scale`; each `[[figure.answers]]`
plots fields of one exercise's public answers (dicts) against their first
argument (`exercise`, `name`, `y`, and optional `xlog`, labels and `title`);
`[figure.compare]` sets a measured distribution beside a simulated one: it names
a measured and a simulated value, each a dict of per-request times by component
(`components` gives their order), and the grader, here, takes their linear
p50/p95/p99 and counts, for the panel and for the report's table.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np

from grader.judge import plain


def _reports(value: Any) -> list[dict[str, Any]]:
    data = plain(value)
    if not isinstance(data, list):
        return []
    rows = []
    for item in data:
        if isinstance(item, dict) and all(k in item for k in ("batch", "p50_ms", "p95_ms")):
            try:
                samples = np.asarray(item.get("samples_ms", []), dtype=float).ravel()
                rows.append({"batch": float(np.asarray(item["batch"], dtype=float)),
                             "p50": float(np.asarray(item["p50_ms"], dtype=float)),
                             "p95": float(np.asarray(item["p95_ms"], dtype=float)), "n": int(samples.size)})
            except (TypeError, ValueError, OverflowError):
                continue
    return [r for r in rows if all(math.isfinite(r[k]) for k in ("batch", "p50", "p95"))]


def _series(value: Any) -> np.ndarray | None:
    try:
        array = np.asarray(plain(value), dtype=float).ravel()
    except (TypeError, ValueError, OverflowError):
        return None
    return array if array.size and np.all(np.isfinite(array)) else None


def _answer_lines(result: dict[str, Any], panel: dict[str, Any]) -> tuple[list[float], dict[str, list[float]]]:
    """x (the first argument) and each named field of one exercise's public answers, rows that are numbers only."""
    kind = "measured" if panel.get("measured") else "simulated"
    answers = ((result.get(kind) or {}).get("answers") or {}).get(panel.get("exercise", ""), [])
    xs: list[float] = []
    ys: dict[str, list[float]] = {field: [] for field in panel.get("y", [])}
    for answer in answers:
        value = plain(answer.get("value")) if "value" in answer else None
        if answer.get("name") != panel.get("name") or not isinstance(value, dict) or not answer.get("args"):
            continue
        try:
            row = [float(np.asarray(plain(answer["args"][0]), dtype=float))]
            row += [float(np.asarray(value[field], dtype=float)) for field in ys]
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        if all(math.isfinite(v) for v in row):
            xs.append(row[0])
            for field, v in zip(ys, row[1:]):
                ys[field].append(v)
    return xs, ys


PERCENTILES = (50, 95, 99)
SIDES = ("measured", "simulated")


def comparison(result: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any] | None:
    """Percentiles and counts of the compared distributions, side by side; None when the lesson compares nothing
    or this run gave neither side. Each side: {component: {"p50", "p95", "p99", "count"} or None}."""
    compare = spec.get("compare") or {}
    if not compare:
        return None
    sides: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        data = plain(((result.get(side) or {}).get("values") or {}).get(compare.get(side, "")))
        sides[side] = {component: _percentiles(data.get(component)) if isinstance(data, dict) else None
                       for component in compare.get("components", [])}
    if not any(stats for side in sides.values() for stats in side.values()):
        return None
    context = plain(((result.get("measured") or {}).get("values") or {}).get(compare.get("context", "")))
    return {"components": list(compare.get("components", [])), "sides": sides,
            "context": context if isinstance(context, dict) else {}, "title": str(compare.get("title", "")),
            "labels": {side: str(compare.get(f"{side}_label", side)) for side in SIDES}}


def _percentiles(values: Any) -> dict[str, float] | None:
    try:
        array = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError, OverflowError):
        return None
    array = array[np.isfinite(array)]
    if not array.size:
        return None
    stats = {f"p{q}": float(np.percentile(array, q)) for q in PERCENTILES}
    stats["count"] = int(array.size)
    return stats


def _compare_panel(ax: Any, table: dict[str, Any], spec: dict[str, Any]) -> None:
    components = table["components"]
    width = 0.8 / (len(SIDES) * len(PERCENTILES))
    colours = {"measured": ("#9ecae1", "#4292c6", "#08519c"), "simulated": ("#fdd0a2", "#f16913", "#a63603")}
    slot = 0
    for side in SIDES:
        counts = sorted({stats["count"] for stats in table["sides"][side].values() if stats})
        for q, colour in zip(PERCENTILES, colours[side]):
            xs = [i - 0.4 + width * (slot + 0.5) for i in range(len(components))]
            heights = [(table["sides"][side][c] or {}).get(f"p{q}", 0.0) for c in components]
            ax.bar(xs, heights, width, color=colour, hatch="//" if side == "simulated" else None,
                   label=f"{table['labels'][side]} p{q}" + (f" (n={'/'.join(map(str, counts))})" if q == 50 and counts else ""))
            slot += 1
    ax.set_xticks(range(len(components)), components)
    _label(ax, spec.get("compare", {}).get("xlabel", "component"), spec.get("compare", {}).get("ylabel", "ms"),
           table["title"])
    ax.legend(fontsize=7, ncol=2, loc="upper left", framealpha=0.85)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.45)  # room for the legend above the bars


def _label(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    """Axis labels, the title and the legend. Both are placed, not searched for: finding the emptiest corner
    ("best") and fitting the title above the tick labels cost a sixth of the figure's drawing time."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, y=1.0)
    ax.legend(loc="upper left")


def warm() -> None:
    """Import the plotting code and its SVG backend now (a batch parent does this once, before forking)."""
    from matplotlib.figure import Figure

    Figure(figsize=(1, 1)).savefig(io.StringIO(), format="svg")


def svg(result: dict[str, Any], spec: dict[str, Any]) -> str:
    """The figure as an SVG string, or "" when this run produced no data for it."""
    if not spec:
        return ""
    measured = (result.get("measured") or {}).get("values", {})
    simulated = (result.get("simulated") or {}).get("values", {})
    reports = _reports(measured.get(spec.get("timings", ""))) if spec.get("timings") else []
    scale_value = measured.get(spec.get("scale", ""))
    try:
        scale = float(np.asarray(plain(scale_value), dtype=float)) if scale_value is not None else 1.0
    except (TypeError, ValueError, OverflowError):
        scale = 1.0
    series = [(label, _series(simulated.get(name)))
              for name, label in zip(spec.get("series", []), spec.get("series_labels", spec.get("series", [])))]
    series = [(label, values) for label, values in series if values is not None]
    lines = [(panel, *_answer_lines(result, panel)) for panel in spec.get("answers", [])]
    lines = [(panel, xs, ys) for panel, xs, ys in lines if len(xs) >= 2]
    table = comparison(result, spec)
    panels = int(bool(reports)) + int(bool(series) and scale > 0) + len(lines) + int(table is not None)
    if not panels:
        return ""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "grader"  # stable ids: the same data gives the same SVG
    fig = Figure(figsize=(7, 3.2 * panels))
    axes = fig.subplots(panels, 1, squeeze=False)
    row = 0
    if reports:
        ax = axes[row][0]
        batches = [r["batch"] for r in reports]
        ax.plot(batches, [r["p50"] for r in reports], "o-", label="warm p50")
        ax.plot(batches, [r["p95"] for r in reports], "s--", label="warm p95")
        for r in reports:
            ax.annotate(f"n={r['n']}", (r["batch"], r["p95"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches, [f"{b:g}" for b in batches])  # plain labels: no mathtext to parse per report
        ax.minorticks_off()
        _label(ax, spec.get("timings_xlabel", "batch size"), spec.get("timings_ylabel", "ms per call (measured)"),
               spec.get("timings_title", "Measured: warm latency (this host, this run)"))
        row += 1
    if series and scale > 0:
        ax = axes[row][0]
        row += 1
        for label, values in series:
            ax.plot(np.arange(values.size), values / scale, label=label)
        _label(ax, "request index", spec.get("series_ylabel", "simulated"), spec.get("series_title", "Simulated"))
    for panel, xs, ys in lines:
        ax = axes[row][0]
        for field, values in ys.items():
            ax.plot(xs, values, "o-", label=field)
        if panel.get("xlog"):
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
            ax.minorticks_off()
        _label(ax, panel.get("xlabel", "input"), panel.get("ylabel", ""), panel.get("title", ""))
        row += 1
    if table is not None:
        _compare_panel(axes[row][0], table, spec)
        row += 1
    fig.suptitle(spec.get("title", ""), fontsize=11)
    fig.subplots_adjust(left=0.13, right=0.97, top=1 - 0.55 / (3.2 * panels), bottom=0.5 / (3.2 * panels), hspace=0.5)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]
