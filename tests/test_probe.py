"""probe: inputs travel as one JSON literal; answers come back behind a nonce, capped."""

from __future__ import annotations

import ast
import json
import math

from grader import lessons, probe, wire


def _plan():
    cases = (lessons.case_from_spec({"call": "f", "args": [{"array": [1.0, float("nan")]}, float("inf")]}),
             lessons.case_from_spec({"value": "x"}))
    return probe.ExercisePlan("ex", ("f", "x"), cases)


def test_probe_cell_carries_inputs_as_a_json_string_literal():
    source = probe.cell_source(_plan(), "@@n@@")
    tree = ast.parse(source)
    call = tree.body[-2].value
    literal = ast.literal_eval(call.args[1])
    request = json.loads(literal)
    assert request["cases"][0]["args"][1] == math.inf
    assert math.isnan(request["cases"][0]["args"][0]["__array__"][1])


def test_probe_runs_against_a_namespace_and_is_parsed():
    import contextlib
    import io

    user = {"f": lambda a, s: [float(v) * 2 for v in a], "x": (1, 2)}
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(probe.cell_source(_plan(), "@@n@@").replace("globals()", "user"), {"user": user})
    outcome = probe.collect(_plan(), {"status": "ok", "stdout": "noise\n" + buffer.getvalue()}, "@@n@@", 10**6)
    assert outcome.status == "ok" and outcome.defined == {"f": True, "x": True}
    assert outcome.results[1] == {"value": [1, 2]}
    assert outcome.results[0]["value"][0] == 2.0 and math.isnan(outcome.results[0]["value"][1])


def test_unreadable_and_oversized_answers():
    plan = _plan()
    assert probe.collect(plan, {"status": "ok", "stdout": "nothing"}, "@@n@@", 100).status == "unreadable"
    big = "@@n@@" + json.dumps({"defined": {}, "results": [{"value": "x" * 500}, {"value": 1}]})
    assert probe.collect(plan, {"status": "ok", "stdout": big}, "@@n@@", 100).status == "unreadable"
    wrong = "@@n@@" + json.dumps({"defined": {}, "results": []})
    assert probe.collect(plan, {"status": "ok", "stdout": wrong}, "@@n@@", 10**6).status == "unreadable"
    assert probe.collect(plan, {"status": "timeout"}, "@@n@@", 100).status == "timeout"


def test_nonces_differ():
    assert probe.new_nonce() != probe.new_nonce()


def test_wire_encodes_hostile_objects_without_raising():
    class Evil:
        def __len__(self):
            raise RuntimeError("no")

        shape = property(lambda self: 1 / 0)

    assert wire.encode(Evil()) == {"__object__": "Evil"}
    assert wire.encode({"a": (1, 2)}) == {"__dict__": [["a", [1, 2]]]}
