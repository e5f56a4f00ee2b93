"""The report's figure, laid out without a kernel: ticks, scales, legends and escaping, checked by hand."""

from __future__ import annotations

import re

import pytest
from conftest import typed

from grader.report import figure, render
from grader.result.evidence import Evidence

SPEC = {"title": "T", "timings": "measurements", "series": ["stable"], "series_labels": ["stable <b>run</b>"],
        "scale": "service_ms", "series_title": "S",
        "timing_fields": {"batch": "size", "p50": "median", "p95": "tail", "samples": "raw"}}  # names the lesson chose


def result(measurements, stable, service_ms=2.0):
    """A result's evidence, as render reads it (decoded once from the result JSON)."""
    return Evidence.of(typed({"lesson": "x", "status": "graded",
                        "measured": {"values": {"measurements": measurements, "service_ms": service_ms}},
                        "simulated": {"values": {"stable": stable}}}))


def timings(*rows):
    return [{"size": b, "median": p50, "tail": p95, "raw": [0.0] * n} for b, p50, p95, n in rows]


@pytest.mark.parametrize("lo, hi, ticks", [
    (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),  # span 1: 1/6 -> magnitude 0.1; step 0.1 gives 10 gaps, 0.2 gives 5
    (3.0, 97.0, [20.0, 40.0, 60.0, 80.0]),       # span 94: magnitude 10; 9.4 gaps of 10, 4.7 of 20
    (-1.0, 4.0, [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0]),
    (0.0, 12.0, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]),  # 12/6 = 2 -> magnitude 1; 6 gaps of 2: 7 ticks, the most
    (0.0, 14.0, [0.0, 2.5, 5.0, 7.5, 10.0, 12.5]),       # 7 gaps of 2 are too many, 5.6 of 2.5 are not
])
def test_ticks_are_round_numbers_covering_the_range(lo, hi, ticks):
    assert figure.nice_ticks(lo, hi) == pytest.approx(ticks)


def test_tick_labels_have_the_decimals_their_step_needs():
    assert figure.tick_label(0.1 + 0.2, 0.1) == "0.3"
    assert figure.tick_label(5.0, 2.5) == "5.0"
    assert figure.tick_label(7.5, 2.5) == "7.5"
    assert figure.tick_label(400.0, 200.0) == "400"
    assert figure.tick_label(0.075, 0.025) == "0.075"
    assert figure.tick_label(0.0, 0.2) == "0"
    assert figure.tick_label(3e7, 1e7) == "3e+07"


def test_the_timings_panel_puts_batches_on_a_log_axis_and_p95_above_p50():
    drawn = figure.layout(result(timings((1, 1.0, 3.0, 40), (2, 2.0, 4.0, 40), (4, 3.0, 5.0, 40)), [1, 1]), SPEC)
    panel = drawn.panels[0]
    p50, p95 = panel.lines
    xs = [x for x, _ in p50.points]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.2)  # 1, 2, 4 equally spaced
    assert all(y95 < y50 for (_, y50), (_, y95) in zip(p50.points, p95.points))  # higher values sit higher up
    assert [label for _, label in panel.xticks] == ["1", "2", "4"]
    assert [text for _, _, text in panel.notes] == ["n=40"] * 3
    # the series panel: values divided by service_ms = 2
    series = drawn.panels[1]
    assert series.top == figure.HEADER + figure.PANEL_HEIGHT and len(series.lines[0].points) == 2


def test_each_panel_says_what_it_shows_with_its_numbers():
    drawn = figure.layout(result(timings((1, 1.5, 3.0, 40), (8, 2.25, 4.0, 40)), list(range(30))), SPEC)
    timed, series = drawn.panels
    assert timed.said[0].endswith("by batch size): 1: 1.5; 8: 2.25")  # each point: the batch, then its p50
    assert timed.said[1].endswith("1: 3; 8: 4")
    # 30 simulated values divided by service_ms = 2: too many to read point by point, so the range and the ends
    assert series.said[0].endswith("30 points, request index 0 to 29, simulated from 0 to 14.5; first 0, last 14.5")


def test_a_single_point_and_a_flat_series_still_draw_inside_the_plot():
    drawn = figure.layout(result([], [5, 5, 5]), SPEC)
    (panel,) = drawn.panels
    for x, y in panel.lines[0].points:
        assert panel.left < x < panel.right and panel.plot_top < y < panel.bottom


def test_values_that_cannot_be_drawn_leave_their_panel_out():
    assert figure.layout(result([], [-1.5e308, 1.5e308], service_ms=1.0), SPEC) is None  # the span overflows a float
    assert figure.layout(result([], [1e308, 1.0], service_ms=0.5), SPEC) is None  # so does a value once scaled
    drawn = figure.layout(result(timings((0, 1.0, 2.0, 3), (-4, 1.0, 2.0, 3)), [1, 2]), SPEC)
    assert [p.title for p in drawn.panels] == ["S"]  # no positive batch to put on a log axis


def test_the_legend_moves_off_the_lines_it_would_hide():
    falling = figure.layout(result([], [10, 8, 6, 4, 2, 0]), SPEC).panels[0]
    rising = figure.layout(result([], [0, 2, 4, 6, 8, 10]), SPEC).panels[0]
    assert falling.key_right and not rising.key_right


def test_the_svg_escapes_every_label():
    svg = render.environment().get_template("figure.svg.j2").render(f=figure.layout(result([], [1, 2]), SPEC))
    assert "stable &lt;b&gt;run&lt;/b&gt;" in svg and "<b>" not in svg
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert len(re.findall(r"<polyline ", svg)) == 1


def test_the_timings_panel_reads_the_field_names_the_lesson_declares():
    other_names = [{"batch": 1, "p50_ms": 1.0, "p95_ms": 2.0, "samples_ms": [0.0]}, {"batch": 2, "p50_ms": 1.0, "p95_ms": 2.0}]
    assert figure.layout(result(other_names, []), SPEC) is None  # rows under names the lesson did not declare: no panel
    drawn = figure.layout(result(timings((1, 1.0, 2.0, 5), (2, 1.5, 2.5, 5)), []), SPEC)
    assert drawn is not None and len(drawn.panels) == 1
