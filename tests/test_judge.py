"""judge: comparison rules, statuses and messages, with values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from grader.judge import expectations, matching, verdict
from grader.judge.expectations import Pending, Value
from grader.lesson import catalog
from grader.lesson.cases import Holds, Raises
from grader.lesson.catalog import Exercise
from grader.run import decoded
from grader.run.cells import CellRun
from grader.run.decoded import Answer
from grader.run.probe import Probe


def case(**kw):
    spec = {"call": "f", "args": [1.0]}
    spec.update(kw)
    return catalog.case_from_spec(spec, hidden=kw.pop("hidden", False))


def test_printed_decimals_rule():
    c = case(decimals=2)
    assert matching.compare(np.float64(463.8651), 463.87, c) is None       # |diff| = 0.0049 <= 0.005
    assert matching.compare(463.875, 463.87, c) is None                    # exactly half a unit (+1e-9 slack)
    assert matching.compare(463.876, 463.87, c) is not None                # 0.006 > 0.005


def test_decimals_per_dict_field():
    c = case(decimals={"rows": 2, "acc": 4})
    expected = {"rows": 145.53, "acc": 0.8067, "calls": 39}
    assert matching.compare({"rows": 145.5325, "acc": 0.80666, "calls": 39}, expected, c) is None
    mismatch = matching.compare({"rows": 145.5325, "acc": 0.80666, "calls": 38}, expected, c)
    assert mismatch is not None and mismatch.where == "'calls'"


def test_default_tolerance_is_rtol_1e6():
    c = case()
    assert matching.compare(np.array([1.0, 2.0]), [1.0, 2.0 + 1.9e-6], c) is None
    off = matching.compare(np.array([1.0, 2.0]), [1.0, 2.0 + 3e-6], c)  # 1.5e-6 relative: past the bound
    assert (off.where, off.want) == ("position [1]", "2.000003") and off.got.startswith("2.0 in")


def test_bools_must_be_bools():
    c = case()
    assert matching.compare(True, True, c) is None
    assert matching.compare(np.asarray(True), True, c) is None
    assert matching.compare(1.0, True, c).public() == "expected True (a bool), got 1.0"
    assert matching.compare("True", True, c).public() == "expected True (a bool), got 'True'"


def test_shapes_and_types():
    c = case()
    assert matching.compare([2.0], 2, c).public() == "expected shape []: 2, got shape [1]: [2.0]"
    assert matching.compare(None, [1.0], c).public() == "expected numbers, got None"
    assert matching.compare("accelerator", "accelerator", c) is None
    assert matching.compare("general-purpose", "accelerator", c).want == "'accelerator'"
    nan = matching.compare(np.array([np.nan]), [1.0], c)
    assert (nan.where, nan.want) == ("position [0]", "1.0") and nan.got.startswith("nan")


def test_hidden_mismatch_never_shows_the_reference_answer():
    mismatch = matching.compare(np.array([1.0, 5.0]), [1.0, 123.456], case())
    assert "123.456" not in mismatch.hidden()
    assert "123.456" in mismatch.public()


def _exercise(*cases):
    return Exercise("ex", "ex", "simulated", 1.0, ("f",), tuple(cases))


def _judge(cases, results, cells=()):
    probe = Probe("ex", "ok", {"f": True}, tuple(map(Answer.from_wire, results)))
    expects = [expectations.expectation(c, {"f": lambda x: x * 2}) for c in cases]
    return verdict.judge(_exercise(*cases), list(cases), probe, expects, cells, None, {})


def test_value_error_subclass_passes_and_other_types_fail():
    c = case(raises="ValueError")
    ok = _judge([c], [{"raised": {"type": "MyError", "value_error": True, "message": ""}}])
    assert ok.status == "passed" and ok.score == 1.0
    wrong = _judge([c], [{"raised": {"type": "TypeError", "value_error": False, "message": "x"}}])
    assert wrong.status == "failed" and "TypeError" in wrong.messages[0]
    silent = _judge([c], [{"value": [1.0]}])
    assert silent.status == "failed" and "must raise ValueError" in silent.messages[0]


def test_exception_on_a_valid_input_is_error_and_hidden_answers_use_the_reference():
    hidden = catalog.case_from_spec({"call": "f", "args": [3.0]}, hidden=True)
    assert _judge([hidden], [{"value": 6.0}]).status == "passed"            # reference: 2 * 3
    assert _judge([hidden], [{"value": 7.0}]).status == "failed"
    err = _judge([hidden], [{"raised": {"type": "KeyError", "value_error": False, "message": "k"}}])
    assert err.status == "error" and "KeyError" in err.messages[0]


def test_undefined_names_missing_error_timeout():
    ex = _exercise(case(expect=2.0))
    probe = Probe("ex", "ok", {"f": False}, (Answer.from_wire({"missing": "f"}),))
    nb = type("NB", (), {"cells": [type("C", (), {"source": "def f(x): ..."})()]})()
    clean = verdict.judge(ex, list(ex.cases), probe, [Value(2.0)], (CellRun(0, "c", "ok"),), nb, {})
    assert clean.status == "missing"
    raised = verdict.judge(ex, list(ex.cases), probe, [Value(2.0)],
                         (CellRun(0, "c", "error", "NameError", "name 'g' is not defined"),), nb, {})
    assert raised.status == "error" and "NameError" in raised.messages[0]
    assert 'the cell starting "def f(x): ..."' in raised.messages[0]  # as the student sees it, not a grader index
    hung = verdict.judge(ex, list(ex.cases), probe, [Value(2.0)], (CellRun(0, "c", "timeout"),), nb, {})
    assert hung.status == "timeout" and hung.messages[0].endswith("ran past its time limit")
    limited = verdict.judge(ex, list(ex.cases), probe, [Value(2.0)],
                            (CellRun(0, "c", "timeout", evalue="interrupted after 5 s"),), nb, {})
    assert limited.messages[0].endswith("ran past its time limit (interrupted after 5 s)")  # the limit it had


@pytest.mark.parametrize("status, expected", [("timeout", "timeout"), ("died", "error"), ("unreadable", "error"),
                                              ("skipped", "timeout")])
def test_probe_failures_map_to_statuses(status, expected):
    ex = _exercise(case(expect=2.0))
    result = verdict.judge(ex, list(ex.cases), Probe("ex", status, detail="why"), [Value(2.0)], (), None, {})
    assert result.status == expected and result.score == 0.0


def test_plain_keeps_dicts_and_array_kinds():
    data = {"__dict__": [["a", {"__array__": [1, 2], "shape": [2], "kind": "i"}], ["b", {"__array__": True, "shape": [], "kind": "b"}]]}
    out = decoded.decode(data)
    assert out["a"].tolist() == [1, 2] and out["a"].dtype.kind == "i" and out["b"].dtype == bool


def test_a_number_no_float_holds_is_that_exercises_failure_not_a_crash():
    ex = _exercise(case(expect=5.95))
    probe = Probe("ex", "ok", {"f": True}, (Answer.from_wire({"value": 10**400}),))
    result = verdict.judge(ex, list(ex.cases), probe, [Value(5.95)], (), None, {})
    assert result.status == "failed" and "expected 5.95" in result.messages[0]
    assert "too large for a float" in result.messages[0]
    assert matching.compare([10**400, 1.0], [1.0, 1.0], case()) is not None
    assert isinstance(decoded.decode({"__array__": [10**400], "shape": [1], "kind": "i"}), decoded.Opaque)


def test_a_consistency_check_that_breaks_on_student_data_is_an_error_of_that_exercise():
    ex = _exercise(case(property="fragile"))

    def fragile(case, value):
        return [] if float(value) > 0 else ["not positive"]  # float(10**400) raises OverflowError

    probe = Probe("ex", "ok", {"f": True}, (Answer.from_wire({"value": 10**400}),))
    result = verdict.judge(ex, list(ex.cases), probe, [Holds("fragile")], (), None, {"fragile": fragile})
    assert result.status == "error" and result.score == 0.0
    assert "`ex`" in result.messages[0] and "OverflowError" in result.messages[0]


def test_a_consistency_check_is_given_decoded_inputs_and_needs_nothing_of_the_graders():
    seen = []

    def positive_sum(asked, value):  # what a lesson's properties.py writes, with no grader import
        seen.append(asked)
        return [] if abs(value - float(np.sum(asked.args[0])) * asked.kwargs["scale"]) < 1e-9 else ["wrong sum"]

    ex = _exercise(case(args=[{"array": [1.5, 2.5]}], kwargs={"scale": 2}, property="positive_sum"))
    probe = Probe("ex", "ok", {"f": True}, (Answer.from_wire({"value": 8.0}),))
    result = verdict.judge(ex, list(ex.cases), probe, [Holds("positive_sum")], (), None, {"positive_sum": positive_sum})
    assert result.status == "passed"  # 2 * (1.5 + 2.5)
    assert isinstance(seen[0].args[0], np.ndarray) and seen[0].args[0].tolist() == [1.5, 2.5]
    assert (seen[0].name, seen[0].mode, seen[0].kwargs, seen[0].hidden) == ("f", "call", {"scale": 2}, False)


def test_a_lesson_naming_an_unknown_check_is_still_the_lessons_fault():
    from grader.base.errors import LessonError

    ex = _exercise(case(property="nowhere"))
    probe = Probe("ex", "ok", {"f": True}, (Answer.from_wire({"value": 1.0}),))
    with pytest.raises(LessonError, match="nowhere"):
        verdict.judge(ex, list(ex.cases), probe, [Holds("nowhere")], (), None, {})


def test_the_same_problem_on_many_cases_is_said_once_with_a_count():
    cases = [catalog.case_from_spec({"call": "f", "args": [float(i)]}, hidden=i > 0) for i in range(8)]
    unfinished = {"raised": {"type": "NotImplementedError", "value_error": False, "message": ""}}
    result = _judge(cases, [unfinished] * 7 + [{"value": 1.0}])
    assert result.status == "error"
    assert result.messages[0] == "7 cases, e.g. `f(0.0)`: raised NotImplementedError"
    assert len(result.messages) == 2 and result.messages[1].startswith("hidden case `f(7.0)`: your answer (1.0)")


def test_ipykernels_file_names_read_as_the_cell():
    from grader.run.cells import readable

    assert readable("invalid syntax (2912668609.py, line 1)") == "invalid syntax (this cell, line 1)"
    assert readable('File /tmp/ipykernel_7/3346742915.py:4') == "File this cell:4"
    assert readable("answer 12345 in main.py") == "answer 12345 in main.py"


def test_a_mismatch_in_returned_arrays_names_the_value_and_the_position():
    c = catalog.case_from_spec({"call": "f", "args": [{"array": [0.0, 1.0, 4.0]}, 2.0],
                                "columns": ["arrival (ms)", "start (ms)", "finish (ms)", "response (ms)"]})
    got = [np.array([0.0, 2.0, 4.0]), np.array([2.0, 4.0, 7.0]), np.array([2.0, 3.0, 2.0])]
    mismatch = matching.compare(got, [[0, 2, 4], [2, 4, 6], [2, 3, 2]], c)
    assert mismatch.where == "the second of 3 returned values (finish (ms)), at index [2]"
    assert mismatch.public().startswith("expected 6.0 for the second of 3 returned values (finish (ms)), at index [2], got 7.0")


def test_a_hidden_input_is_shown_in_a_form_that_pastes():
    c = catalog.case_from_spec({"call": "f", "args": [{"array": [0.0, 0.5] * 20 + [float("nan")]}, 1.5]}, hidden=True)
    label = c.label().strip("`")
    np_namespace = {"np": np, "f": lambda a, s: (a, s)}
    rebuilt, service = eval(label, np_namespace)
    assert rebuilt.shape == (41,) and np.isnan(rebuilt[-1]) and service == 1.5


def test_a_case_on_the_students_own_values_is_judged_on_exactly_those():
    own = catalog.case_from_spec({"call": "f", "args": [{"kernel": "x"}]}, hidden=True)
    assert expectations.expectation(own, {"f": lambda x: x * 2}) == Pending(("x",))
    reference = {"f": lambda x: x * 2 if x >= 0 else (_ for _ in ()).throw(ValueError("negative"))}
    # the reference is asked on the echoed value (3 -> 6), and the label keeps the student's name for it
    case, expect = expectations.resolved(own, Answer.from_wire({"args": [3.0], "value": 6.0}), Pending(("x",)), reference)
    assert expect == Value(6.0) and case.label() == "`f(x)`"
    # a value the reference refuses with ValueError: the contract wants a ValueError from the student too
    assert expectations.resolved(own, Answer.from_wire({"args": [-1.0], "value": 0.0}), Pending(("x",)), reference)[1] == Raises("ValueError")
    # an answer that does not say what it was asked on cannot pass
    case, expect = expectations.resolved(own, Answer.from_wire({"value": 6.0}), Pending(("x",)), reference)
    judged = verdict.judge(_exercise(case), [case], Probe("ex", "ok", {"f": True}, (Answer.from_wire({"value": 6.0}),)), [expect], (), None, {})
    assert judged.status == "failed" and "without the values" in judged.messages[0]


def _fit_exercise():
    """An exercise whose `predicted` is computed from the student's own `live` records (by hand: mean * 2),
    which the reference refuses with ValueError when they hold fewer than two values."""
    predicted = catalog.case_from_spec({"value": "predicted", "reference": "predict", "args": [{"kernel": "live"}]},
                                       hidden=True)
    ex = Exercise("fit", "fit", "simulated", 1.0, ("fit", "predicted", "live"),
                  (catalog.case_from_spec({"call": "fit", "args": [[1.0, 3.0]]}),))

    def fit(values):
        if len(set(values)) < 2:
            raise ValueError("two distinct values needed")
        return sum(values) / len(values)

    reference = {"fit": fit, "predict": lambda values: fit(values) * 2}
    nb = type("NB", (), {"cells": [type("C", (), {"source": "predicted = fit(live) * 2"})()]})()
    return ex, [*ex.cases, predicted], reference, nb


def _judge_fit(live, predicted_result, cell):
    ex, cases, reference, nb = _fit_exercise()
    results = (Answer.from_wire({"value": 2.0}), Answer.from_wire(predicted_result))
    expects = [expectations.expectation(c, reference) for c in cases]
    pairs = [expectations.resolved(c, r, e, reference) for c, r, e in zip(cases, results, expects)]
    probe = Probe("fit", "ok", {"fit": True, "predicted": "missing" not in predicted_result, "live": True}, results)
    return verdict.judge(ex, [c for c, _ in pairs], probe, [e for _, e in pairs], (cell,), nb, {})


def test_a_value_no_one_can_compute_from_the_students_own_data_is_not_held_against_them():
    # one distinct value in `live` (all batches full on a busy host): the reference's fit raises ValueError,
    # the student's cell raised ValueError, so `predicted` is undefined, as the contract wants
    raised = CellRun(0, "c", "error", "ValueError", "two distinct values needed")
    degenerate = _judge_fit([4.0, 4.0], {"missing": "predicted", "args": [[4.0, 4.0]]}, raised)
    assert degenerate.status == "passed" and degenerate.score == 1.0
    assert degenerate.messages[0] == "1 of 2 cases passed (1 public, 1 hidden); 1 could not be compared on this run"
    assert "given live" in degenerate.messages[1] and "raises ValueError" in degenerate.messages[1]
    # the same undefined name when the reference can compute it (4 and 6: mean 5, predicted 10) is an error
    usable = _judge_fit([4.0, 6.0], {"missing": "predicted", "args": [[4.0, 6.0]]}, raised)
    assert usable.status == "error" and "`predicted`" in usable.messages[0]
    # a cell that failed otherwise (a typo) is the student's error even on data no one can fit
    typo = CellRun(0, "c", "error", "NameError", "name 'fitt' is not defined")
    assert _judge_fit([4.0, 4.0], {"missing": "predicted", "args": [[4.0, 4.0]]}, typo).status == "error"
    # and a name never defined while every cell ran cleanly is still missing
    clean = CellRun(0, "c", "ok")
    assert _judge_fit([4.0, 4.0], {"missing": "predicted", "args": [[4.0, 4.0]]}, clean).status == "missing"
    # when it is defined and right on usable data, it is compared as usual
    assert _judge_fit([4.0, 6.0], {"value": 10.0, "args": [[4.0, 6.0]]}, clean).status == "passed"
    assert _judge_fit([4.0, 6.0], {"value": 11.0, "args": [[4.0, 6.0]]}, clean).status == "failed"


def test_one_bug_on_many_inputs_is_said_once_whatever_numbers_each_shows_and_one_case_is_the_case():
    shown = "your answer for the first of 3 returned values (start (ms)), at index [{i}] ({v} in [{a}]) differs"
    verdicts = [verdict.CaseVerdict(f"`q({n})`", True, "failed",
                                  f"hidden case `q({n})`: " + shown.format(i=n, v=n * 1.5, a=f"0.0, {n * 1.5}"))
                for n in (1, 2, 4)]
    verdicts.append(verdict.CaseVerdict("`q(9)`", True, "failed", "hidden case `q(9)`: raised ValueError: no"))
    lines = verdict.grouped(verdicts)
    assert lines[0].startswith("3 cases, e.g. hidden case `q(1)`: your answer for the first of 3 returned values")
    assert lines[1] == "hidden case `q(9)`: raised ValueError: no" and len(lines) == 2
    assert verdict._passed_line([case()], {}) == "the case passed"


def test_top_level_names_are_read_without_running_anything():
    from grader.base import syntax

    sources = ["import numpy as np\nfrom jax import numpy as jnp\nimport os.path",
               "def f():\n    inner = 1\nclass K: pass\nx, (y, z) = 1, (2, 3)\nw: int = 4",
               "%timeit f()", "raise SystemExit  # never run"]
    assert syntax.defined_names(sources) == {"np", "jnp", "os", "f", "K", "x", "y", "z", "w"}


def test_a_notebook_of_another_lesson_is_recognised_by_its_names():
    """The judge's note on a notebook handed in for the wrong lesson: it defines every name inference-scaling's
    exercises need, and (as a notebook of inference-capacity) few of its own lesson's."""
    from grader import grading
    from grader.judge import judging
    from grader.lesson import catalog, handout

    ready = grading.prepared(catalog.get("inference-capacity"), public_only=True)
    assert {other for other, _ in ready.others} == {"inference-scaling", "dynamic-batching"}
    scaling = handout.solution_notebook(catalog.get("inference-scaling"))
    found = judging.other_lesson(scaling, ready.needed, ready.others)
    assert found is not None and found[0] == "inference-scaling" and found[1] == found[2]
    own = handout.solution_notebook(catalog.get("inference-capacity"))
    assert judging.other_lesson(own, ready.needed, ready.others) is None
