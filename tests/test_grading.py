"""grading: the lesson a notebook belongs to, and grades that replay exactly."""

from __future__ import annotations

import pytest
from conftest import FAST, SEED, statuses, write

from grader import grading
from grader.lesson import catalog, handout
from grader.lesson.draw import Given

pytestmark = pytest.mark.kernel

# Eight strings: their set order depends on the hash seed, and on nothing else.
SET_ORDER = ("words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta']\n"
             "order = list(set(words))\n"
             "print(order)")
ANSWER = "interpolated_p95 = 5.95 if order[0] in ('alpha', 'beta', 'gamma', 'delta') else 0.0"


def _printed(result) -> str:
    return "".join("".join(o.get("text", "")) for c in result.notebook.cells for o in c.get("outputs", []))


def test_a_set_order_dependent_notebook_grades_five_times_to_one_result(make_notebook):
    path = make_notebook(SET_ORDER, ANSWER)
    runs = [grading.grade(path, "inference-capacity", grading.Options(limits=FAST), None, Given(seed=SEED)) for _ in range(5)]
    assert len({_printed(r) for r in runs}) == 1
    assert len({statuses(r.to_dict())["p95-interpolation"] for r in runs}) == 1
    assert {r.hash_seed for r in runs} == {SEED % 2**32}
    others = {_printed(grading.grade(path, "inference-capacity", grading.Options(limits=FAST), None, Given(seed=SEED + k)))
              for k in (1, 2)}
    assert others - {_printed(runs[0])}  # another seed, another order: the seed is what fixed it


def test_an_explicit_hash_seed_wins_and_is_recorded(make_notebook):
    path = make_notebook(SET_ORDER)
    one = grading.grade(path, "inference-capacity", grading.Options(limits=FAST), None, Given(1, hash_seed=12345))
    two = grading.grade(path, "inference-capacity", grading.Options(limits=FAST), None, Given(2, hash_seed=12345))
    assert one.hash_seed == two.hash_seed == 12345 and _printed(one) == _printed(two)


def test_a_notebook_of_another_lesson_is_told_so(tmp_path):
    notebook = handout.solution_notebook(catalog.get("inference-scaling"))
    notebook.metadata.pop("grader", None)  # no metadata to go by: the names tell
    path = write(notebook, tmp_path / "mixed-up.ipynb")
    result = grading.grade(path, "inference-capacity", grading.Options(limits=FAST), None, Given(seed=SEED)).to_dict()
    assert result["notes"] and "lesson 'inference-scaling'" in result["notes"][0]
    missing = [e for e in result["exercises"] if e["status"] == "missing"]
    assert missing and all("inference-scaling" in e["messages"][0] for e in missing)
