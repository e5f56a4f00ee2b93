"""probe: inputs travel as one JSON literal; answers come back behind a nonce, capped."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys

from grader.lesson import catalog
from grader.run import probe, sections as protocol, wire
from grader.run.cells import ProbeOutcome
from grader.run.decoded import Answer


def _plan():
    cases = (catalog.case_from_spec({"call": "f", "args": [{"array": [1.0, float("nan")]}, float("inf")]}),
             catalog.case_from_spec({"value": "x"}))
    return probe.ExercisePlan("ex", ("f", "x"), cases)


def test_probe_cell_carries_inputs_as_a_json_string_literal():
    source = probe.cell_source([_plan()], "@@n@@", 5)
    tree = ast.parse(source)
    assert len(tree.body) == 1  # one line: the program, the request and the wire code are string literals
    call = tree.body[0].value
    assert ast.unparse(call.args[0]) == "globals()"
    literal = ast.literal_eval(call.args[1])
    request = json.loads(literal)
    assert request["sections"][0]["key"] == "ex"
    assert request["sections"][0]["cases"][0]["args"][1] == math.inf
    assert math.isnan(request["sections"][0]["cases"][0]["args"][0]["__array__"][1])


def test_probe_runs_against_a_namespace_and_is_parsed():
    import contextlib
    import io

    user = {"f": lambda a, s: [float(v) * 2 for v in a], "x": (1, 2)}
    buffer = io.StringIO()
    namespace = {"user": user}
    with contextlib.redirect_stdout(buffer):
        exec(probe.cell_source([_plan()], "@@n@@", 5).replace("globals()", "user"), namespace)
    assert set(namespace) == {"user", "__builtins__"} and set(user) == {"f", "x"}  # the probe leaves no names behind
    outcome = probe.collect(_plan(), ProbeOutcome("ok", "noise\n" + buffer.getvalue()), "@@n@@", 10**6)
    assert outcome.status == "ok" and outcome.defined == {"f": True, "x": True}
    assert outcome.results[1].value == [1, 2] and outcome.results[1].wire == [1, 2]  # a tuple arrives as a list
    assert outcome.results[0].value[0] == 2.0 and math.isnan(outcome.results[0].value[1])


def test_unreadable_and_oversized_answers():
    plan = _plan()
    assert probe.collect(plan, ProbeOutcome("ok", "nothing"), "@@n@@", 100).status == "unreadable"
    big = "@@n@@answer:ex:" + json.dumps({"defined": {}, "results": [{"value": "x" * 500}, {"value": 1}]})
    assert probe.collect(plan, ProbeOutcome("ok", big), "@@n@@", 100).status == "unreadable"
    other = "@@n@@answer:other:" + json.dumps({"defined": {}, "results": [{"value": 1}, {"value": 1}]})
    assert probe.collect(plan, ProbeOutcome("ok", other), "@@n@@", 10**6).status == "unreadable"
    wrong = "@@n@@answer:ex:" + json.dumps({"defined": {}, "results": []})
    assert probe.collect(plan, ProbeOutcome("ok", wrong), "@@n@@", 10**6).status == "unreadable"
    assert probe.collect(plan, ProbeOutcome("timeout"), "@@n@@", 100).status == "timeout"


def test_nonces_differ():
    assert probe.new_nonce() != probe.new_nonce()


def test_wire_encodes_hostile_objects_without_raising():
    class Evil:
        def __len__(self):
            raise RuntimeError("no")

        shape = property(lambda self: 1 / 0)

    assert wire.encode(Evil()) == {"__object__": "Evil"}
    assert wire.encode({"a": (1, 2)}) == {"__dict__": [["a", [1, 2]]]}


def _answer_line(nonce, text):
    return ProbeOutcome("ok", "noise\n" + nonce + "answer:ex:" + text + "\n")


def test_forged_answers_are_unreadable_with_a_reason_never_a_crash():
    plan = _plan()
    forged = {
        "wrong types": json.dumps({"defined": {"f": [1]}, "results": [{"value": 1}, {"value": 2}]}),
        "unknown wire form": json.dumps({"defined": {}, "results": [{"value": {"__dict__": [[1]]}}, {"value": 1}]}),
        "raised junk": json.dumps({"defined": {}, "results": [{"raised": {"type": {"x": 1}}}, {"value": 1}]}),
        "extra keys": json.dumps({"defined": {}, "results": [{"value": 1, "judge": "pass"}, {"value": 1}]}),
        "not a list": json.dumps({"defined": {}, "results": {"value": 1}}),
        "deep": "[" * 5000 + "]" * 5000,
        "deep but parseable": json.dumps({"defined": {}, "results": [{"value": _nested(100)}, {"value": 1}]}),
    }
    for name, text in forged.items():
        got = probe.collect(plan, _answer_line("@@n@@", text), "@@n@@", 10**7)
        assert got.status == "unreadable", name
        assert got.detail and "\n" not in got.detail, name


def _nested(depth):
    value = 1.0
    for _ in range(depth):
        value = [value]
    return value


def test_plain_answers_with_every_wire_form_are_accepted():
    plan = _plan()
    text = json.dumps({"defined": {"f": True, "x": False}, "results": [
        {"value": [1, 2.5, None, "s", {"__array__": [[1, 2]], "shape": [1, 2], "kind": "f"},
                   {"__dict__": [["k", {"__object__": "Thing"}]]}]},
        {"raised": {"type": "ValueError", "value_error": True, "message": "bad"}}]})
    got = probe.collect(plan, _answer_line("@@n@@", text), "@@n@@", 10**7)
    assert got.status == "ok" and got.defined == {"f": True, "x": False}


def test_the_kernel_cannot_rewrite_the_graders_environment_facts():
    line = "@@n@@" + json.dumps({"kernel_python": "3.11", "graded_at": "2099-01-01", "jobs_at_once": 99,
                                 "jax_devices": ["cpu"] * 100})
    got = probe.collect_environment(ProbeOutcome("ok", line), "@@n@@")
    assert got["kernel_python"] == "3.11" and "graded_at" not in got and "jobs_at_once" not in got
    assert len(got["jax_devices"]) == 16


def _run_sections(user, plans, seconds):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(probe.cell_source(plans, "@@n@@", seconds).replace("globals()", "user"), {"user": user})
    return buffer.getvalue()


def test_each_exercise_has_its_own_time_limit_and_the_next_one_still_runs():
    import time

    def slow(*args):
        while True:
            time.sleep(0.05)

    first = probe.ExercisePlan("slow", ("f",), (catalog.case_from_spec({"call": "f", "args": [1]}),))
    second = probe.ExercisePlan("quick", ("g",), (catalog.case_from_spec({"call": "g", "args": [2]}),))
    began = time.monotonic()
    text = _run_sections({"f": slow, "g": lambda v: v * 21}, [first, second], 0.3)
    assert time.monotonic() - began < 5
    assert probe.collect(first, ProbeOutcome("ok", text), "@@n@@", 10**6).status == "timeout"
    quick = probe.collect(second, ProbeOutcome("ok", text), "@@n@@", 10**6)
    assert quick.status == "ok" and quick.results == (Answer(42, 42),)
    sections = protocol.Sectioned(("slow", "quick"), lambda keys, journal: "", "@@n@@", 0.3)
    assert sections.progress(text) == (["slow", "quick"], {"slow", "quick"})


def test_progress_names_the_section_that_was_running_when_the_kernel_stopped():
    sections = protocol.Sectioned(("a", "b", "c"), lambda keys, journal: "", "@@n@@", 1)
    text = "x\n@@n@@begin:a\n@@n@@answer:a:{}\nstudent noise\n@@n@@begin:b\nmore noise"
    assert sections.progress(text) == (["a", "b"], {"a"})


def test_the_journal_names_the_section_a_dying_kernel_was_in_when_its_stdout_was_lost(tmp_path):
    # os._exit in the second section; the first one's answer and the second's start never reach stdout, as when a
    # dying kernel's IOPub thread had not sent them yet. The journal, written with write(2), still has them.
    journal = tmp_path / protocol.JOURNAL
    plans = [probe.ExercisePlan(key, (name,), (catalog.case_from_spec({"call": name, "args": [1]}),))
             for key, name in (("a", "f"), ("b", "g"), ("c", "h"))]
    source = probe.cell_source(plans, "@@n@@", 5, str(journal)).replace("globals()", "user")
    program = ("import io, os, sys\n"
               "user = {'f': lambda v: v, 'g': lambda v: os._exit(3), 'h': lambda v: v}\n"
               "sys.stdout = io.StringIO()\n"
               f"exec({source!r}, {{'user': user}})\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=60)
    assert done.returncode == 3, done.stderr
    sections = protocol.Sectioned(("a", "b", "c"), lambda keys, journal: "", "@@n@@", 5)
    noted = protocol.read_journal(str(journal))
    assert sections.progress(noted) == (["a", "b"], {"a"})
    assert protocol.stopped_section(sections, ("a", "b", "c"), "", noted) == "b"


def test_a_section_that_finished_is_not_blamed_when_only_its_answer_was_lost():
    sections = protocol.Sectioned(("a", "b", "c"), lambda keys, journal: "", "@@n@@", 1)
    noted = "@@n@@begin:a\n@@n@@answer:a\n@@n@@begin:b\n@@n@@answer:b\n@@n@@begin:c\n"
    assert protocol.stopped_section(sections, ("a", "b", "c"), "@@n@@begin:a\n@@n@@answer:a:{}\n", noted) == "c"
    # without a journal (no run dir), stdout decides as before
    assert protocol.stopped_section(sections, ("a", "b", "c"), "@@n@@begin:a\n@@n@@answer:a:{}\n@@n@@begin:b\n", "") == "b"


def test_a_journal_replaced_by_a_fifo_or_a_link_is_not_read(tmp_path):
    fifo, link, big = tmp_path / "fifo", tmp_path / "link", tmp_path / "big"
    os.mkfifo(fifo)
    secret = tmp_path / "secret"
    secret.write_text("@@n@@begin:a\n")
    link.symlink_to(secret)
    assert protocol.read_journal(str(fifo)) == ""  # returns at once: a FIFO would block a plain open
    assert protocol.read_journal(str(link)) == ""
    assert protocol.read_journal(str(tmp_path / "absent")) == ""
    big.write_bytes(b"x" * (3 * protocol.JOURNAL_BYTES) + b"\n@@n@@begin:z\n")
    tail = protocol.read_journal(str(big))
    assert len(tail) == protocol.JOURNAL_BYTES and tail.endswith("@@n@@begin:z\n")


def test_a_missing_value_still_reports_the_students_own_values_it_is_computed_from():
    # `predicted` is computed from the student's `live`; the judge needs `live` even when `predicted` is undefined
    own = catalog.case_from_spec({"value": "predicted", "reference": "predict", "args": [{"kernel": "live"}, 3]})
    absent_input = catalog.case_from_spec({"value": "predicted", "args": [{"kernel": "nowhere"}]})
    plan = probe.ExercisePlan("fit", ("predicted", "live"), (own, absent_input))
    found = probe.collect(plan, ProbeOutcome("ok", _run_sections({"live": [1.0, 2.0]}, [plan], 5)), "@@n@@", 10**6)
    assert found.status == "ok" and found.defined == {"predicted": False, "live": True}
    assert found.results == (Answer(missing="predicted", args=([1.0, 2.0], 3)), Answer(missing="predicted"))
