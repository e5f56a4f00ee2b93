"""Lesson dynamic-batching: the batching rule by hand, the live server, and grading.

Every expected timeline below is worked by hand from the contract's rule:
dispatch at max(free, min(arrival[i] + max_wait, arrival[i + max_batch - 1])),
taking every request arrived by then (at most max_batch), a batch of b taking
setup + per_item * b.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SEED, statuses, typed

from grader.lesson import catalog, staff_code

LESSON = "dynamic-batching"
ALL = ["batcher-sim", "policy-choice", "live-replay", "service-fit"]


@pytest.fixture(scope="module")
def ref():
    return staff_code.reference(catalog.get(LESSON))


HAND_WORKED = {
    # name: (arrivals, max_batch, max_wait, setup, per_item) -> (starts, finishes, sizes)
    "lesson hand check": (([0, 1, 2, 10], 2, 4.0, 1.0, 1.0), ([1, 1, 6, 14], [4, 4, 8, 16], [2, 2, 1, 1])),
    # five ties: two full batches at once, then the last one waits out its bound with the worker idle
    "ties": (([0, 0, 0, 0, 0], 2, 10.0, 1.0, 1.0), ([0, 0, 3, 3, 10], [3, 3, 6, 6, 12], [2, 2, 2, 2, 1])),
    # an idle gap: each request waits its own bound, alone
    "idle gap": (([0, 100], 4, 5.0, 2.0, 0.5), ([5, 105], [7.5, 107.5], [1, 1])),
    # a burst of 7 with max_batch 3: full batches back to back behind the busy worker
    "burst longer than max_batch": (([0] * 7, 3, 2.0, 1.0, 1.0),
                                    ([0, 0, 0, 4, 4, 4, 8], [4, 4, 4, 8, 8, 8, 10], [3, 3, 3, 3, 3, 3, 1])),
    # max_wait 0: leave at once, but whoever arrives while the worker is busy rides along
    "max_wait 0": (([0, 1, 1, 3], 4, 0.0, 1.0, 1.0), ([0, 2, 2, 5], [2, 5, 5, 7], [1, 2, 2, 1])),
    # a request arriving exactly at the dispatch time rides in that batch
    "arrival at the dispatch time": (([0, 4], 4, 4.0, 1.0, 1.0), ([4, 4], [7, 7], [2, 2])),
}


@pytest.mark.parametrize("name", sorted(HAND_WORKED))
def test_batching_rule_on_hand_worked_traces(ref, name):
    (arrivals, max_batch, wait, setup, per_item), want = HAND_WORKED[name]
    got = ref["simulate_batching"](np.array(arrivals, dtype=float), max_batch, wait, setup, per_item)
    for got_part, want_part in zip(got, want):
        assert np.asarray(got_part).tolist() == [float(v) for v in want_part], name


def test_max_batch_one_is_the_fcfs_queue_of_inference_capacity(ref):
    fcfs = staff_code.reference(catalog.get("inference-capacity"))["simulate_queue"]
    rng = np.random.default_rng(SEED)
    for _ in range(20):
        arrivals = np.cumsum(rng.choice([0.0, 0.25, 1.0, 3.0, 20.0], size=40))
        setup, per_item = rng.integers(0, 8) * 0.25, rng.integers(1, 8) * 0.25
        starts, finishes, sizes = ref["simulate_batching"](arrivals, 1, float(rng.integers(0, 20)), setup, per_item)
        q_starts, q_finishes, _ = fcfs(arrivals, setup + per_item)
        assert starts.tolist() == np.asarray(q_starts).tolist() and finishes.tolist() == np.asarray(q_finishes).tolist()
        assert set(sizes.tolist()) == {1.0}
    # the contract's hand check of inference-capacity, as max_batch 1
    starts, finishes, _ = ref["simulate_batching"](np.array([0.0, 1.0, 4.0]), 1, 3.0, 1.5, 0.5)
    assert (starts.tolist(), finishes.tolist()) == ([0, 2, 4], [2, 4, 6])


@pytest.mark.parametrize("args", [
    ([[0.0, 1.0], [2.0, 3.0]], 2, 1.0, 1.0, 1.0), ([0.0, np.nan], 2, 1.0, 1.0, 1.0), ([3.0, 1.0], 2, 1.0, 1.0, 1.0),
    ([0.0, 1.0], 0, 1.0, 1.0, 1.0), ([0.0, 1.0], 2.5, 1.0, 1.0, 1.0), ([0.0, 1.0], True, 1.0, 1.0, 1.0),
    ([0.0, 1.0], 2, -1.0, 1.0, 1.0), ([0.0, 1.0], 2, np.inf, 1.0, 1.0), ([0.0, 1.0], 2, 1.0, -1.0, 1.0),
    ([0.0, 1.0], 2, 1.0, 0.0, 0.0), ([0.0, 1.0], 2, 1.0, 1.0, np.inf),
])
def test_invalid_inputs_raise_value_error(ref, args):
    arrivals, *rest = args
    with pytest.raises(ValueError):
        ref["simulate_batching"](np.array(arrivals, dtype=float), *rest)


def test_valid_edge_cases(ref):
    empty = ref["simulate_batching"](np.array([]), 2, 1.0, 1.0, 1.0)
    assert [len(part) for part in empty] == [0, 0, 0]
    starts, _, _ = ref["simulate_batching"](np.array([0.0, 0.0]), 2.0, 1.0, 1.0, 1.0)  # 2.0 is a whole number
    assert starts.tolist() == [0, 0]


def test_choose_policy_by_hand(ref):
    choose = ref["choose_policy"]
    four = np.zeros(4)
    # max_batch 1: four batches, busy 4 * 2 + 4 * 0.5 = 10; max_batch 4: one batch, busy 2 + 2 = 4
    assert tuple(choose(four, 2.0, 0.5, 100.0, [1, 4], [0.0])) == (4, 0.0)
    # waits 0 and 5 give the same batches (full at once): a tie on busy time and p99 goes to the smaller wait
    assert tuple(choose(four, 2.0, 0.5, 100.0, [4], [5.0, 0.0])) == (4, 0.0)
    # every batch takes at least 2.5 ms: an objective of 1 ms is met by nothing
    assert choose(four, 2.0, 0.5, 1.0, [1, 4], [0.0, 5.0]) is None
    # the objective rules out the cheapest: max_batch 4 gives p99 = 4 (all finish at 4), max_batch 2 gives
    # finishes 3, 3, 6, 6 (p99 = 5.91); with slo 3.5 neither meets it, with slo 4 only max_batch 4 does
    assert choose(four, 2.0, 0.5, 3.5, [2, 4], [0.0]) is None
    assert tuple(choose(four, 2.0, 0.5, 4.0, [2, 4], [0.0])) == (4, 0.0)


def test_latency_summary_matches_the_lesson_figures(ref):
    got = ref["latency_summary"](np.array([1.0, 2, 3, 4, 100]))
    want = {"p50": 3.0, "p95": 80.8, "p99": 96.16, "max": 100.0, "count": 5}  # 4 + 0.8 * 96, 4 + 0.96 * 96
    assert got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-9 for k in want)


def test_fit_uses_one_point_per_batch(ref):
    # batches of 1, 2, 4 taking 3, 3, 4.5 ms: slope 2.5 / (14/3) = 15/28, intercept 3.5 - 15/28 * 7/3 = 2.25
    records = [{"batch_id": b, "batch_size": size, "compute_start_ms": 0.0, "compute_end_ms": took}
               for b, size, took in ((0, 1, 3.0), (1, 2, 3.0), (1, 2, 3.0), (2, 4, 4.5), (2, 4, 4.5), (2, 4, 4.5),
                                     (2, 4, 4.5))]
    setup, per_item = ref["fit_service"](records)
    assert abs(setup - 2.25) < 1e-9 and abs(per_item - 15 / 28) < 1e-9
    with pytest.raises(ValueError):
        ref["fit_service"]([dict(r, batch_size=2) for r in records])


# ---- the given server and replayer, in a process of their own ----

@pytest.fixture(scope="module")
def served():
    """What tests/batching_server_check.py saw running the given server and replayer (JSON)."""
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("batching_server_check.py"))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.kernel
def test_overloaded_server_answers_200_or_503_and_leaves_nothing_behind(served):
    seen = served["overloaded"]
    assert seen["count"] == seen["trace"] == 400  # one record per request, answered or refused
    assert seen["statuses"] == ["200", "503"]  # a queue of 3 cannot hold this trace one by one
    assert seen["retry_after"] == ["1"]
    assert seen["threads_left"] == [] and seen["sockets_after"] == seen["sockets_before"]


@pytest.mark.kernel
def test_replay_gives_consistent_records_under_the_lesson_policy(served):
    seen = served["replayed"]
    assert seen["problems"] == []
    assert seen["broken_problems"]  # the property can fail: a record whose compute ends before it starts
    assert seen["max_batch_size"] <= seen["policy"][0]
    assert seen["keys"] == sorted(["id", "scheduled_ms", "sent_ms", "enqueued_ms", "dispatched_ms", "compute_start_ms",
                                   "compute_end_ms", "received_ms", "batch_id", "batch_size"])


@pytest.mark.kernel
def test_every_replay_is_bounded(served):
    too_many, too_long, unordered = served["refusals"]
    assert "at most 400" in too_many and "within 10 s" in too_long and "non-decreasing" in unordered


@pytest.mark.kernel
def test_traces_fit_the_bounds_and_are_exactly_representable(served):
    for name, trace in served["traces"].items():
        assert 0 < trace["count"] <= 400 and trace["last"] <= 10_000, name
        assert trace["sorted"] and trace["quarters"], name


# ---- grading, in a kernel ----

@pytest.mark.kernel
def test_reference_scores_full_marks_and_the_report_compares(graded):
    result = graded.solution(LESSON)
    assert statuses(result) == dict.fromkeys(ALL, "passed"), result["exercises"]
    kinds = {e["id"]: e["kind"] for e in result["exercises"]}
    assert kinds == {"batcher-sim": "simulated", "policy-choice": "simulated", "live-replay": "measured",
                     "service-fit": "simulated"}
    labels = [a["case"] for a in result["measured"]["answers"]["live-replay"]]
    assert labels[0] == "live (given policy, TRACE_OVERLOADED)" and not any("`" in label for label in labels)
    from grader.report import render
    html = render.report_html(typed(result))
    assert "Measured service (loopback) beside the simulation" in html
    table = html.split('<table tabindex="0" class="comparison">')[1].split("</table>")[0]
    assert table.count("<td>400</td>") == 8  # four components, each counted on both sides
    assert "measured (live, loopback)" in table and "simulated (fitted costs)" in table
    assert "<svg" in html


BUGS = {"wait-from-free": "batcher-sim", "policy-lowest-p99": "policy-choice", "policy-ties-by-max-batch": "policy-choice",
        "measured-from-sent": "live-replay", "fit-per-record": "service-fit"}


def _choose(ref, order):
    """choose_policy with another tie rule: `order` makes the key from (busy, p99, max_batch, max_wait)."""
    def choose(arrival_ms, setup_ms, per_item_ms, p99_slo_ms, max_batches, max_waits_ms):
        arrivals, best = np.asarray(arrival_ms, dtype=float), None
        for max_batch in max_batches:
            for max_wait in max_waits_ms:
                starts, finishes, _ = ref["simulate_batching"](arrivals, max_batch, max_wait, setup_ms, per_item_ms)
                p99 = float(np.percentile(finishes - arrivals, 99))
                busy = len(set(starts.tolist())) * setup_ms + arrivals.size * per_item_ms
                if p99 <= p99_slo_ms and (best is None or order(busy, p99, max_batch, max_wait) < best[0]):
                    best = (order(busy, p99, max_batch, max_wait), (max_batch, max_wait))
        return None if best is None else best[1]
    return choose


@pytest.mark.parametrize("rule, order", [
    ("max_batch before p99", lambda busy, p99, batch, wait: (busy, batch, p99, wait)),
    ("max_wait before max_batch", lambda busy, p99, batch, wait: (busy, p99, wait, batch)),
    ("larger max_wait first", lambda busy, p99, batch, wait: (busy, p99, batch, -wait)),
    ("the first one found", lambda busy, p99, batch, wait: (busy,)),
])
def test_every_draw_of_hidden_policy_cases_catches_each_wrong_tie_rule(ref, rule, order):
    wrong = _choose(ref, order)
    for seed in range(40):  # whatever seed a student's grade draws
        cases = [c for c in staff_code.hidden_cases(catalog.get(LESSON), seed)["policy-choice"] if c.name == "choose_policy"]
        args = [[a["__array__"] if isinstance(a, dict) else a for a in c.args] for c in cases]
        assert any(wrong(*a) != ref["choose_policy"](*a) for a in args), (rule, seed)


@pytest.mark.kernel
@pytest.mark.parametrize("bug, target", sorted(BUGS.items()))
def test_each_realistic_bug_fails_its_exercise(graded, bug, target):
    result = graded.patch(LESSON, bug)
    got = statuses(result)
    assert got[target] == "failed", result["exercises"]
    if bug != "wait-from-free":  # the simulator is used by every later exercise
        assert {ex: st for ex, st in got.items() if ex != target} == {ex: "passed" for ex in ALL if ex != target}


@pytest.mark.kernel
def test_a_live_run_with_one_batch_size_costs_the_reference_nothing(graded):
    # On a busy host every batch of the live replay can be full: no line can be fitted to one size, so the
    # contract's fit_service raises ValueError and `predicted` cannot exist, for the reference as for the student.
    # Seen under load (8 busy loops on 2 cores: 50 batches of 8, every run); forced here by the patch.
    result = graded.patch(LESSON, "busy-host")
    assert statuses(result) == dict.fromkeys(ALL, "passed"), result["exercises"]
    fit = next(e for e in result["exercises"] if e["id"] == "service-fit")
    assert "could not be compared on this run" in fit["messages"][0]
    assert any("`predicted`" in m and "your own functions raise ValueError" in m for m in fit["messages"][1:])
    excused = [c for c in fit["cases"] if c["outcome"] == "excused"]
    assert {c["hidden"] for c in excused} == {False}  # the public recomputation alone: nothing hidden reads `live`
    # ... while the student's pipeline is still held to the reference's on records the seed fixes
    pipeline = [c for c in fit["cases"] if c["hidden"] and c["label"].startswith("`predicted` as your own functions")]
    assert [c["outcome"] for c in pipeline] == ["passed"]
    # the report says why its comparison is absent, instead of leaving it out without a word
    from grader.report import render
    html = render.report_html(typed(result))
    assert 'class="comparison"' not in html
    absent = html.split('id="comparison-absent">')[1].split("</p>")[0]
    assert "`service_measured` and `service_simulated` undefined" in absent and "not compared on this run" in absent


@pytest.mark.kernel
def test_the_self_check_excuses_a_fit_the_students_own_functions_refuse(graded):
    result = graded.patch(LESSON, "busy-host", public_only=True)
    fit = next(e for e in result["exercises"] if e["id"] == "service-fit")
    assert fit["status"] == "passed", fit
    assert "your own functions raise ValueError" in " ".join(fit["messages"])


@pytest.mark.kernel
def test_a_closed_loop_client_fails_live_replay_and_is_told_why(graded):
    result = graded.patch(LESSON, "closed-loop")
    got = statuses(result)
    assert got["live-replay"] == "failed", result["exercises"]
    assert {ex: st for ex, st in got.items() if ex != "live-replay"} == {ex: "passed" for ex in ALL if ex != "live-replay"}
    message = next(e for e in result["exercises"] if e["id"] == "live-replay")["messages"][0]
    assert "closed-loop" in message and "send every request at its scheduled time" in message


@pytest.mark.kernel
@pytest.mark.parametrize("bug, target, words", [
    ("policy-lowest-p99", "policy-choice", "`policy`: expected 4.0 for position [1], got 0.0"),
    ("predicted-declared-costs", "service-fit", "is not what your own functions give"),
])
def test_the_self_check_fails_what_grading_would(graded, bug, target, words):
    # `policy` is fixed by the handout's data and `predicted` by the student's own records: `check` sees both
    checked = graded.patch(LESSON, bug, public_only=True)
    assert statuses(checked)[target] == "failed", checked["exercises"]
    assert words in " ".join(next(e for e in checked["exercises"] if e["id"] == target)["messages"])
    assert statuses(graded.patch(LESSON, bug))[target] == "failed"


@pytest.mark.kernel
def test_a_simulator_wrong_on_one_case_earns_the_share_it_passed(graded):
    result = graded.patch(LESSON, "batcher-sim-accepts-bool")
    sim = next(e for e in result["exercises"] if e["id"] == "batcher-sim")
    failed = [c for c in sim["cases"] if c["outcome"] != "passed"]
    assert sim["status"] == "failed" and sim["scoring"] == "cases"
    assert len(failed) == 1 and "True" in failed[0]["label"] and failed[0]["hidden"]
    counted = len(sim["cases"])
    assert counted == sim["public_cases"] + sim["hidden_cases"] > 20
    assert sim["score"] == pytest.approx((counted - 1) / counted)
    assert result["score"] == pytest.approx(3 + (counted - 1) / counted)
    assert f"{counted - 1} of {counted} cases passed" in sim["messages"][0]
    # every platform carries the same fractional score, split over the public and hidden tests
    from grader.report import platform_results
    from grader.result.record import read_result
    gradescope = platform_results.gradescope_results(read_result(result))
    assert gradescope["score"] == pytest.approx(result["score"])
    assert sum(t["score"] for t in gradescope["tests"]) == pytest.approx(result["score"])
    sim_tests = [t for t in gradescope["tests"] if t["name"].startswith("batcher-sim")]
    assert [t["score"] for t in sim_tests] == pytest.approx([sim["public_cases"] / counted,
                                                             (sim["hidden_cases"] - 1) / counted])
    assert sum(t["max_score"] for t in sim_tests) == pytest.approx(1.0)
    prairielearn = platform_results.prairielearn_results(read_result(result))
    autograded = len(gradescope["tests"])  # then the instructor's part, as tests of its own (none graded yet)
    assert [t["points"] for t in prairielearn["tests"][:autograded]] == [t["score"] for t in gradescope["tests"]]
    assert [(t["name"], t["points"], t["output"]) for t in prairielearn["tests"][autograded:]] == [
        ("written: prediction", 0.0, "not graded yet"), ("written: explanation", 0.0, "not graded yet")]
    assert prairielearn["score"] == pytest.approx(result["score"] / 7)  # of 4 exercise and 3 written points
