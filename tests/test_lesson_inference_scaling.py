"""Lesson inference-scaling: the rebuild reproduces the seed's tables; bugs fail their exercise.

Every expected figure in this file is typed from the lesson's printed tables.
"""

from __future__ import annotations

import dataclasses
import math

import nbformat
import numpy as np
import pytest
from conftest import statuses

from grader.base.errors import LessonError
from grader.lesson import catalog, handout, staff_code
from grader.run import submission

LESSON = "inference-scaling"
ALL = ["batch-sweep", "crossover", "cache-product"]

# size: calls, unfilled, rows read, rows/prediction, worst wait, avg wait, same answer, accuracy
SEED_SWEEP = {
    1: (600, 0, 278322, 463.87, 0, 0.00, True, 0.8067),
    2: (300, 0, 252450, 420.75, 1, 0.50, True, 0.8067),
    4: (150, 0, 203610, 339.35, 3, 1.50, True, 0.8067),
    8: (75, 0, 140316, 233.86, 7, 3.50, True, 0.8067),
    16: (39, 8, 87318, 145.53, 15, 7.34, True, 0.8067),
    32: (21, 8, 51183, 85.31, 31, 15.02, True, 0.8067),
    64: (12, 8, 31383, 52.30, 63, 30.38, True, 0.8067),
    128: (6, 72, 19800, 33.00, 127, 53.42, True, 0.8067),
    200: (3, 0, 13200, 22.00, 199, 99.50, True, 0.8067),
}
# size: realised group, general-purpose work/prediction, accelerator work/prediction, cheaper
SEED_CLASSES = {
    1: (1.0, 64.00, 301.00, "general-purpose"), 2: (2.0, 34.00, 151.00, "general-purpose"),
    4: (4.0, 19.00, 76.00, "general-purpose"), 8: (8.0, 11.50, 38.50, "general-purpose"),
    16: (15.4, 7.90, 20.50, "general-purpose"), 32: (28.6, 6.10, 11.50, "general-purpose"),
    64: (50.0, 5.20, 7.00, "general-purpose"), 128: (100.0, 4.60, 4.00, "accelerator"),
    200: (200.0, 4.30, 2.50, "accelerator"),
}


def near(x, printed, decimals):
    return abs(x - printed) <= 0.5 * 10 ** -decimals + 1e-9


@pytest.fixture(scope="module")
def ref():
    return staff_code.reference(catalog.get(LESSON))


@pytest.mark.parametrize("size", sorted(SEED_SWEEP))
def test_rebuild_reproduces_the_sweep_table(ref, size):
    calls, unfilled, rows, per, worst, avg, same, acc = SEED_SWEEP[size]
    row = ref["sweep"](size)
    assert (row["calls"], row["unfilled"], row["rows_read"], row["worst_wait"]) == (calls, unfilled, rows, worst)
    assert near(row["rows_per_prediction"], per, 2) and near(row["avg_wait"], avg, 2)
    assert row["same_answer"] is same and near(row["accuracy"], acc, 4)


@pytest.mark.parametrize("size", [3, 5, 7, 50, 99, 150, 199])
def test_reference_sweep_agrees_with_process_group_called_on_every_group(ref, size):
    """Hidden sizes: the reference works a call's rows out rather than running the pipeline on every group; run
    it here, group by group, as the lesson's text describes, and count."""
    predictions, rows, calls = {}, 0, 0
    for period in ref["SERVING"]:
        for start in range(0, len(ref["REQUESTS"]), size):
            answers, read = ref["process_group"](ref["REQUESTS"][start:start + size], period)
            predictions.update(answers)
            rows, calls = rows + read, calls + 1
    row = ref["sweep"](size)
    right = sum(1 for key, truth in ref["TRUTH"].items() if predictions[key] == truth)
    assert (row["calls"], row["rows_read"]) == (calls, rows)
    assert row["accuracy"] == right / 600 and row["same_answer"] is True


def test_label_balance_and_test_base_ratio(ref):
    labels = [ref["label"](r) for r in ref["ALL"]]
    assert (labels.count(0), labels.count(1)) == (1752, 448)
    assert near(labels.count(0) / len(labels), 0.7964, 4)
    truth = list(ref["TRUTH"].values())
    assert len(truth) == 600 and near(truth.count(0) / 600, 0.8067, 4)


@pytest.mark.parametrize("size", sorted(SEED_CLASSES))
def test_rebuild_reproduces_the_accelerator_table(ref, size):
    realised, general, accel, cheaper = SEED_CLASSES[size]
    n = len(ref["REQUESTS"])
    assert near(ref["realized_group_size"](n, size), realised, 1)
    calls = 3 * math.ceil(n / size)
    work_general = calls * 60 + 4 * 600
    work_accel = calls * 300 + 1 * 600
    assert near(work_general / 600, general, 2) and near(work_accel / 600, accel, 2)
    assert ref["cheaper_class"](n, size, ref["GENERAL"], ref["ACCEL"]) == cheaper


def test_crossover_points(ref):
    assert [ref["crossover_point"]((60, 4), (setup, 1)) for setup in (150, 300, 600)] == [30.0, 80.0, 180.0]
    with pytest.raises(ValueError):
        ref["crossover_point"]((60, 4), (300, 4))


def test_rebuild_reproduces_the_cache_table(ref):
    stream = ref["STREAM"]
    distinct = list(dict.fromkeys(stream))
    assert len(stream) == 600 and len(distinct) == 193
    assert near((600 - 193) / 600, 0.6783, 4)
    cost = ref["cost"]
    reads = [cost(stream, 1), cost(stream, 32), cost(distinct, 1), cost(distinct, 32)]
    assert reads == [278916, 47872, 89221, 15829]
    for read, per_request in zip(reads, (464.86, 79.79, 148.70, 26.38)):
        assert near(read / 600, per_request, 2)
    assert near(ref["predicted_product"], 0.0549, 4) and near(ref["actual_combined"], 0.0568, 4)
    assert near(ref["batching_factor"], 0.1716, 4) and near(ref["cache_factor"], 0.3199, 4)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reference_cost_agrees_with_process_group_on_drawn_streams(ref, seed):
    """Streams like the hidden cases': the reference counts a call's rows itself; process_group says them."""
    rng = np.random.default_rng(seed)
    stream = [f"A{int(i) + 1:03d}" for i in rng.integers(0, 150, size=300)]
    for size, period in ((1, "2026-12"), (7, "2026-11"), (40, "2026-10")):
        said = sum(ref["process_group"](stream[i:i + size], period)[1] for i in range(0, len(stream), size))
        assert ref["cost"](stream, size, period) == said


BUGS = {
    "crossover-sign-flipped": "crossover",
    "realized-returns-requested": "crossover",
    "cheaper-on-requested-size": "crossover",
    "cache-from-sorted-set": "cache-product",
    "combined-is-the-product": "cache-product",
    "sweep-drops-unfilled-group": "batch-sweep",
}


@pytest.mark.kernel
def test_reference_scores_full_marks(graded):
    result = graded.solution(LESSON)
    assert statuses(result) == dict.fromkeys(ALL, "passed")
    assert result["score"] == 3.0


@pytest.mark.kernel
@pytest.mark.parametrize("bug, target", sorted(BUGS.items()))
def test_each_realistic_bug_fails_exactly_its_exercise(graded, bug, target):
    result = graded.patch(LESSON, bug)
    got = statuses(result)
    assert got[target] == "failed", result["exercises"]
    assert {ex: st for ex, st in got.items() if ex != target} == {ex: "passed" for ex in ALL if ex != target}


@pytest.mark.kernel
def test_requested_size_bug_is_caught_only_by_the_hidden_81_to_99_case(graded):
    result = graded.patch(LESSON, "cheaper-on-requested-size")
    crossover = next(e for e in result["exercises"] if e["id"] == "crossover")
    assert all(c["outcome"] == "passed" for c in crossover["cases"] if not c["hidden"])
    failed = [c["label"] for c in crossover["cases"] if c["outcome"] != "passed"]
    assert any(label.startswith("`cheaper_class(200, ") for label in failed)


@pytest.mark.kernel
def test_hard_coded_seed_figures_fail_on_hidden_cases(graded):
    result = graded.patch(LESSON, "hardcodes-seed-figures")
    assert statuses(result) == dict.fromkeys(ALL, "failed")
    for exercise in result["exercises"]:
        assert all(c["outcome"] == "passed" for c in exercise["cases"] if not c["hidden"]), exercise["id"]


@pytest.mark.kernel
def test_sweep_feedback_shows_the_field_that_differs(graded):
    graded.patch(LESSON, "sweep-drops-unfilled-group")  # writes the notebook
    result = graded.file(graded.folder / LESSON / "sweep-drops-unfilled-group.ipynb", LESSON, public_only=True)
    messages = next(e for e in result["exercises"] if e["id"] == "batch-sweep")["messages"]
    assert any("`sweep(16)`" in m and "'calls'" in m and "expected 39" in m for m in messages), messages


def _code_index(notebook, cell_id):
    return next(i for i, c in enumerate(notebook.cells) if c.get("id") == cell_id)


def test_warm_cells_stand_for_an_unchanged_leading_prefix_only():
    lesson = catalog.get("inference-scaling")
    solution = handout.solution_notebook(lesson)
    leading = [i for i, c in enumerate(solution.cells) if c.cell_type == "code"][:3]
    assert submission.warm_prefix(handout.warm_sources(lesson), solution) == frozenset(leading)
    solution.cells[leading[1]].source += "\n\n"  # whitespace at the end changes nothing that runs
    assert submission.warm_prefix(handout.warm_sources(lesson), solution) == frozenset(leading)
    changed = handout.solution_notebook(lesson)
    changed.cells[_code_index(changed, "given-pipeline")].source = changed.cells[
        _code_index(changed, "given-pipeline")].source.replace("THRESHOLD = PERIODS[1:9], PERIODS[9:], 40",
                                                                "THRESHOLD = PERIODS[1:9], PERIODS[9:], 41")
    assert "41" in changed.cells[_code_index(changed, "given-pipeline")].source
    assert submission.warm_prefix(handout.warm_sources(lesson), changed) == frozenset()
    before = handout.solution_notebook(lesson)
    before.cells.insert(0, nbformat.v4.new_code_cell("SEED = 1"))
    assert submission.warm_prefix(handout.warm_sources(lesson), before) == frozenset()


def test_warm_cells_must_be_the_leading_silent_given_cells(tmp_path):
    lesson = catalog.get("inference-scaling")

    def check(cells, folder=lesson.folder):
        return handout.warm_sources(dataclasses.replace(lesson, warm_cells=cells, folder=folder))

    assert len(check(("given-source", "given-pipeline"))) == 2
    with pytest.raises(LessonError, match="not the scaffold's first code cells"):
        check(("given-pipeline",))
    with pytest.raises(LessonError, match="not a given cell"):
        check(("given-source", "given-pipeline", "given-serving", "answer-sweep"))
    text = (lesson.folder / "scaffold.py").read_text(encoding="utf-8")  # the template reads the script itself
    shows = tmp_path / "shows"
    shows.mkdir()
    (shows / "scaffold.py").write_text(text.replace("# %% id=given-pipeline", "SEED\n\n# %% id=given-pipeline", 1),
                                       encoding="utf-8")
    with pytest.raises(LessonError, match="ends in an expression"):
        check(("given-source",), shows)


