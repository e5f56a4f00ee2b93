"""The lesson's figure, laid out from one result's data (templates/figure.svg.j2 writes it as inline SVG).

Panels, each optional, described by the lesson's `[figure]` table:
`timings` names a measured list of timing reports (p50/p95 per batch, with the
sample count written beside each point), whose keys `[figure.timing_fields]` names; `series` names simulated response
vectors, divided by the measured value named by `scale`; each `[[figure.answers]]`
plots fields of one exercise's public answers (dicts) against their first
argument (`exercise`, `name`, `y`, and optional `xlog`, labels and `title`);
`[figure.compare]` sets a measured distribution beside a simulated one: it names
a measured and a simulated value, each a dict of per-request times by component
(`components` gives their order), and the grader, here, takes their linear
p50/p95/p99 and counts, for the panel and for the report's table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from grader.result.evidence import Evidence


def _reports(value: Any, fields: dict[str, str]) -> list[dict[str, Any]]:
    """Rows of a measured timing list; `fields` (the lesson's `[figure.timing_fields]`) names the batch size,
    p50, p95 and samples keys of each row."""
    data = value
    if not isinstance(data, list):
        return []
    batch, p50, p95, samples_key = (fields.get(k, "") for k in ("batch", "p50", "p95", "samples"))
    rows = []
    for item in data:
        if isinstance(item, dict) and all(k in item for k in (batch, p50, p95)):
            try:
                samples = np.asarray(item.get(samples_key, []), dtype=float).ravel()
                rows.append({"batch": float(np.asarray(item[batch], dtype=float)),
                             "p50": float(np.asarray(item[p50], dtype=float)),
                             "p95": float(np.asarray(item[p95], dtype=float)), "n": int(samples.size)})
            except (TypeError, ValueError, OverflowError):
                continue
    return [r for r in rows if all(math.isfinite(r[k]) for k in ("batch", "p50", "p95"))]


def _series(value: Any) -> np.ndarray | None:
    try:
        array = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError, OverflowError):
        return None
    return array if array.size and np.all(np.isfinite(array)) else None


def _answer_lines(seen: Evidence, panel: dict[str, Any]) -> tuple[list[float], dict[str, list[float]]]:
    """x (the first argument) and each named field of one exercise's public answers, rows that are numbers only."""
    kind = "measured" if panel.get("measured") else "simulated"
    xs: list[float] = []
    ys: dict[str, list[float]] = {field: [] for field in panel.get("y", [])}
    for answer in seen.answers.get(kind, {}).get(panel.get("exercise", ""), ()):
        value = answer.value
        if answer.name != panel.get("name") or not isinstance(value, dict) or not answer.args:
            continue
        try:
            row = [float(np.asarray(answer.args[0], dtype=float))]
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


def comparison(seen: Evidence, spec: dict[str, Any]) -> dict[str, Any] | None:
    """Percentiles and counts of the compared distributions, side by side; None when the lesson compares nothing
    or this run gave neither side. Each side: {component: {"p50", "p95", "p99", "count"} or None}."""
    compare = spec.get("compare") or {}
    if not compare:
        return None
    sides: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        data = seen.value(side, compare.get(side, ""))
        sides[side] = {component: _percentiles(data.get(component)) if isinstance(data, dict) else None
                       for component in compare.get("components", [])}
    if not any(stats for side in sides.values() for stats in side.values()):
        return None
    context = seen.value("measured", compare.get("context", ""))
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


# Drawing. The figure is laid out here, in pixels, and written as SVG by templates/figure.svg.j2.
# matplotlib drew the same panels in 50-125 ms per report, half of a capacity grade's worker CPU
# (bench/phase_profile.py); laying them out directly takes about a millisecond.

WIDTH, PANEL_HEIGHT, HEADER = 700, 300, 28
LEFT, RIGHT, TOP, BOTTOM = 76, 16, 30, 50
"""Plot area inside each panel: margins in pixels."""
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
BAR_COLOURS = {"measured": ("#9ecae1", "#4292c6", "#08519c"), "simulated": ("#fdd0a2", "#f16913", "#a63603")}
LOG_SPREAD = 30.0
"""Bars whose tallest is more than this many times the shortest get a logarithmic axis."""
CHAR_WIDTH = 6.2
"""Rough width of one character of legend text at 11 px (a legend box only needs to be wide enough)."""


@dataclass(frozen=True)
class Line:
    label: str
    colour: str
    points: tuple[tuple[float, float], ...]
    """In pixels, inside the panel."""
    dashed: bool = False
    marker: str = ""
    """"circle", "square" or "" (a plain line)."""


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    hatched: bool


@dataclass(frozen=True)
class Key:
    """One legend entry."""

    label: str
    colour: str
    dashed: bool = False
    marker: str = ""
    hatched: bool = False
    bar: bool = False


@dataclass(frozen=True)
class Panel:
    top: float
    title: str
    xlabel: str
    ylabel: str
    xticks: tuple[tuple[float, str], ...]
    yticks: tuple[tuple[float, str], ...]
    lines: tuple[Line, ...] = ()
    bars: tuple[Bar, ...] = ()
    notes: tuple[tuple[float, float, str], ...] = ()
    keys: tuple[Key, ...] = ()
    key_columns: int = 1
    key_right: bool = False
    """The legend sits in the upper right corner (else the upper left)."""
    left: float = LEFT
    right: float = WIDTH - RIGHT
    plot_top: float = TOP
    bottom: float = PANEL_HEIGHT - BOTTOM
    said: tuple[str, ...] = ()
    """What the panel shows, in words and numbers: its text alternative (the report lists it under the figure)."""

    def key_box(self) -> tuple[float, float]:
        """Width and height of the legend box."""
        rows = -(-len(self.keys) // self.key_columns)
        return self.key_columns * self.key_width(), 8 + 16 * rows

    def key_width(self) -> float:
        return 34 + CHAR_WIDTH * max((len(k.label) for k in self.keys), default=0)

    def key_x(self) -> float:
        return self.right - 6 - self.key_box()[0] if self.key_right else self.left + 6

    def covered(self, right: bool) -> int:
        """Points of the lines that the legend would hide in the upper left (or right) corner."""
        width, height = self.key_box()
        x0 = self.right - 6 - width if right else self.left + 6
        return sum(1 for line in self.lines for x, y in line.points
                   if x0 - 4 <= x <= x0 + width + 4 and y <= self.plot_top + 6 + height + 4)


@dataclass(frozen=True)
class Figure:
    title: str
    width: int
    height: int
    panels: tuple[Panel, ...]


def nice_ticks(lo: float, hi: float, most: int = 7) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering [lo, hi], at most `most` of them."""
    span = hi - lo
    if not (math.isfinite(span) and span > 0):
        return [lo] if math.isfinite(lo) else []
    magnitude = 10.0 ** math.floor(math.log10(span / (most - 1)))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if span / (m * magnitude) <= most - 1)
    first = math.ceil(lo / step - 1e-9)
    return [k * step for k in range(first, math.floor(hi / step + 1e-9) + 1)]


def tick_label(value: float, step: float) -> str:
    """A tick value with as many decimals as its step needs (0.02, 0.04; 2.5, 5.0; 200, 400)."""
    if value == 0:
        return "0"
    if abs(value) >= 1e6 or abs(value) < 1e-4:
        return f"{value:.3g}"
    decimals = next((d for d in range(13) if abs(round(step, d) - step) <= abs(step) * 1e-6), 12)
    return f"{value:.{decimals}f}"


class _Scale:
    """Data to pixels along one axis: linear, or base-2 logarithmic."""

    def __init__(self, lo: float, hi: float, pixel_lo: float, pixel_hi: float, log2: bool = False,
                 margin: float = 0.05, log10: bool = False) -> None:
        """`margin`: the share of the data's span left empty at each end (as matplotlib does)."""
        self.log2, self.log10 = log2, log10
        lo, hi = (self._log(lo), self._log(hi)) if log2 or log10 else (lo, hi)
        if not hi > lo:
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
        self.lo, self.hi = lo - (hi - lo) * margin, hi + (hi - lo) * margin
        if not math.isfinite(self.hi - self.lo):
            raise ValueError("values too far apart to draw")
        self.pixel_lo, self.pixel_hi = pixel_lo, pixel_hi

    def _log(self, value: float) -> float:
        return math.log10(value) if self.log10 else math.log2(value)

    def __call__(self, value: float) -> float:
        v = self._log(value) if self.log2 or self.log10 else value
        return round(self.pixel_lo + (v - self.lo) / (self.hi - self.lo) * (self.pixel_hi - self.pixel_lo), 1)

    def ticks(self) -> tuple[tuple[float, str], ...]:
        if self.log10:  # powers of ten, labelled as values
            return tuple((self(10.0 ** k), f"{10.0 ** k:g}") for k in range(math.ceil(self.lo), math.floor(self.hi) + 1))
        values = nice_ticks(self.lo, self.hi)
        step = values[1] - values[0] if len(values) > 1 else 1.0
        return tuple((self(v), tick_label(v, step)) for v in values)


def _line_panel(top: float, title: str, xlabel: str, ylabel: str, series: Sequence[tuple[str, Sequence[float], Sequence[float], str, bool]],
                xlog: bool = False, notes: tuple[tuple[float, float, str], ...] = ()) -> Panel | None:
    """Series are (label, xs, ys, marker, dashed); on a log axis only positive x are drawn."""
    kept = []
    for label, xs, ys, marker, dashed in series:
        pairs = [(a, b) for a, b in zip(xs, ys) if a > 0 or not xlog]
        if pairs:
            kept.append((label, [a for a, _ in pairs], [b for _, b in pairs], marker, dashed))
    series = kept
    if not series:
        return None
    xs = [x for s in series for x in s[1]]
    ys = [y for s in series for y in s[2]]
    try:
        x = _Scale(min(xs), max(xs), LEFT, WIDTH - RIGHT, log2=xlog)
        y = _Scale(min(ys), max(ys), PANEL_HEIGHT - BOTTOM, TOP)
    except ValueError:  # values too far apart for a float span: this panel is left out
        return None
    xticks = tuple((x(v), f"{v:g}") for v in sorted(set(xs))) if xlog else x.ticks()
    lines = tuple(Line(label, COLOURS[i % len(COLOURS)], tuple((x(a), y(b)) for a, b in zip(sx, sy)), dashed, marker)
                  for i, (label, sx, sy, marker, dashed) in enumerate(series))
    panel = Panel(top, title, xlabel, ylabel, xticks, y.ticks(), lines=lines,
                  notes=tuple((x(a) + 4, y(b) - 4, text) for a, b, text in notes if a > 0 or not xlog),
                  keys=tuple(Key(line.label, line.colour, line.dashed, line.marker) for line in lines),
                  said=tuple(_said_line(label, sx, sy, xlabel, ylabel) for label, sx, sy, _, _ in series))
    return replace(panel, key_right=panel.covered(right=True) < panel.covered(right=False))


def _said_line(label: str, xs: Sequence[float], ys: Sequence[float], xlabel: str, ylabel: str, most: int = 12) -> str:
    """One line of a panel in words: each point (x: y), or for a line of over `most` points its count, range, ends."""
    if len(xs) <= most:
        return f"{label} ({ylabel} by {xlabel}): " + "; ".join(f"{a:g}: {b:.4g}" for a, b in zip(xs, ys))
    return (f"{label} ({ylabel} by {xlabel}): {len(xs)} points, {xlabel} {min(xs):g} to {max(xs):g}, {ylabel} from "
            f"{min(ys):.4g} to {max(ys):.4g}; first {ys[0]:.4g}, last {ys[-1]:.4g}")


def _said_compare(table: dict[str, Any], unit: str) -> tuple[str, ...]:
    """A comparison in words: per component, each side's percentiles side by side."""
    return tuple(f"{component}: " + "; ".join(
        f"{table['labels'][side]} " + ", ".join(f"p{q} {float(stats.get(f'p{q}', 0.0)):.4g}" for q in PERCENTILES)
        + f" {unit}" if (stats := table["sides"][side][component]) else f"{table['labels'][side]}: none"
        for side in SIDES) for component in table["components"])


def _compare_panel(top: float, table: dict[str, Any], spec: dict[str, Any]) -> Panel:
    """Grouped bars: per component, p50/p95/p99 of the measured side, then of the simulated one."""
    components = table["components"]
    heights = {(side, q, c): float((table["sides"][side][c] or {}).get(f"p{q}", 0.0))
               for side in SIDES for q in PERCENTILES for c in components}
    tallest = max([h for h in heights.values() if math.isfinite(h)] + [0.0])
    positive = [h for h in heights.values() if math.isfinite(h) and h > 0]
    # A backlogged replay's total runs to seconds while a batch computes in milliseconds: one linear axis would
    # leave the compute bars invisible, so a wide spread gets a logarithmic axis (zero-height bars are not drawn).
    log = bool(positive) and max(positive) / min(positive) > LOG_SPREAD
    floor = 10.0 ** (math.floor(math.log10(min(positive))) - 1) if log else 0.0  # the shortest bar spans a decade
    # The legend (two columns) gets a band of its own above the tallest bar: it never covers one.
    band = TOP + 6 + 8 + 16 * math.ceil(len(SIDES) * len(PERCENTILES) / 2) + 6
    y = (_Scale(floor, tallest * 1.5, PANEL_HEIGHT - BOTTOM, band, margin=0.0, log10=True) if log else
         _Scale(0.0, (tallest or 1.0) * 1.05, PANEL_HEIGHT - BOTTOM, band, margin=0.0))
    base = floor if log else 0.0
    x = _Scale(-0.5, len(components) - 0.5, LEFT, WIDTH - RIGHT, margin=0.0)
    slots = len(SIDES) * len(PERCENTILES)
    width = 0.8 / slots
    bars, keys, slot = [], [], 0
    for side in SIDES:
        counts = sorted({stats["count"] for stats in table["sides"][side].values() if stats})
        for q, colour in zip(PERCENTILES, BAR_COLOURS[side]):
            for i, component in enumerate(components):
                h = heights[(side, q, component)]
                if not math.isfinite(h) or (log and h <= 0):
                    continue
                left = x(i - 0.4 + width * slot)
                bars.append(Bar(left, min(y(h), y(base)), round(x(i - 0.4 + width * (slot + 1)) - left, 1),
                                round(abs(y(base) - y(h)), 1), colour, side == "simulated"))
            keys.append(Key(f"{table['labels'][side]} p{q}" + (f" (n={'/'.join(map(str, counts))})" if q == 50 and counts else ""),
                            colour, hatched=side == "simulated", bar=True))
            slot += 1
    compare = spec.get("compare", {})
    ylabel = str(compare.get("ylabel", "ms")) + (" (log scale)" if log else "")
    return Panel(top, table["title"], compare.get("xlabel", "component"), ylabel,
                 tuple((x(i), str(c)) for i, c in enumerate(components)), y.ticks(), bars=tuple(bars),
                 keys=tuple(keys), key_columns=2, said=_said_compare(table, str(compare.get("ylabel", "ms"))))


def planned_panels(spec: dict[str, Any]) -> int:
    """How many panels the lesson's figure has when every one of them has data."""
    return (bool(spec.get("timings")) + bool(spec.get("series")) + len(spec.get("answers", []))
            + bool(spec.get("compare")))


def layout(seen: Evidence, spec: dict[str, Any]) -> Figure | None:
    """The lesson's figure for one result's evidence, laid out in pixels; None when this run produced no data for it."""
    if not spec:
        return None
    measured, simulated = seen.values.get("measured", {}), seen.values.get("simulated", {})
    reports = _reports(measured.get(spec.get("timings", "")), spec.get("timing_fields", {})) if spec.get("timings") else []
    scale_value = measured.get(spec.get("scale", ""))
    try:
        scale = float(np.asarray(scale_value, dtype=float)) if scale_value is not None else 1.0
    except (TypeError, ValueError, OverflowError):
        scale = 1.0
    series = [(label, _series(simulated.get(name)))
              for name, label in zip(spec.get("series", []), spec.get("series_labels", spec.get("series", [])))]
    found = [(str(label), values) for label, values in series if values is not None]
    panels: list[Panel | None] = []
    top = float(HEADER)
    if reports:
        batches = [r["batch"] for r in reports]
        panels.append(_line_panel(
            top, spec.get("timings_title", "Measured: warm latency (this host, this run)"),
            spec.get("timings_xlabel", "batch size"), spec.get("timings_ylabel", "ms per call (measured)"),
            [("warm p50", batches, [r["p50"] for r in reports], "circle", False),
             ("warm p95", batches, [r["p95"] for r in reports], "square", True)],
            xlog=True, notes=tuple((r["batch"], r["p95"], f"n={r['n']}") for r in reports)))
        top += PANEL_HEIGHT if panels[-1] else 0
    if found and scale > 0:
        with np.errstate(all="ignore"):
            scaled = [(label, list(range(values.size)), (values / scale).tolist(), "", False) for label, values in found]
        scaled = [s for s in scaled if all(math.isfinite(v) for v in s[2])]
        panels.append(_line_panel(top, spec.get("series_title", "Simulated"), "request index",
                                  spec.get("series_ylabel", "simulated"), scaled) if scaled else None)
        top += PANEL_HEIGHT if panels[-1] else 0
    for panel in spec.get("answers", []):
        xs, ys = _answer_lines(seen, panel)
        if len(xs) < 2:
            continue
        panels.append(_line_panel(top, panel.get("title", ""), panel.get("xlabel", "input"), panel.get("ylabel", ""),
                                  [(field, xs, values, "circle", False) for field, values in ys.items()],
                                  xlog=bool(panel.get("xlog"))))
        top += PANEL_HEIGHT if panels[-1] else 0
    table = comparison(seen, spec)
    if table is not None:
        panels.append(_compare_panel(top, table, spec))
        top += PANEL_HEIGHT
    drawn = tuple(p for p in panels if p is not None)
    if not drawn:
        return None
    return Figure(str(spec.get("title", "")), WIDTH, int(top) + 4, drawn)
