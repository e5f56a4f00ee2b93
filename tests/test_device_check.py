"""device_check: a device counts as working only when JAX computed on it, in a kernel started as a student's.

The kernel is replaced here by what it printed (execution.execute's outcome), so each rule is checked on its own;
tests/test_devices.py runs the real check in a sandboxed kernel.
"""

from __future__ import annotations

import json

import nbformat
import pytest

from grader.base.limits import Limits
from grader.kernel.isolation import SandboxReport
from grader.run import device_check, execution
from grader.run.cells import CellRun

REPORT = SandboxReport("bwrap", {})


def _printing(found, calls):
    def execute(notebook, tail, limits, manager, **kwargs):
        calls.append(limits)
        source = notebook.cells[0].source
        mark = json.loads(source[source.index("print(") + 6:source.index(" + __json")])
        out = nbformat.v4.new_output("stream", name="stdout", text=mark + json.dumps(found) + "\n")
        cell = nbformat.v4.new_code_cell(source, outputs=[out] if found is not None else [])
        return execution.Executed((CellRun(0, "c", "ok"),), {}, nbformat.v4.new_notebook(cells=[cell]), 1, (), 1.0)
    return execute


@pytest.mark.parametrize("device, found, works, why", [
    ("gpu", {"backend": "gpu", "kind": "NVIDIA H100", "count": 1, "computed": True, "precision": "highest"}, True, ""),
    ("gpu", {"backend": "cpu", "kind": "cpu", "count": 1, "computed": True}, False, "JAX ran on cpu, not on a gpu"),
    ("gpu", {"backend": "gpu", "kind": "x", "count": 1, "computed": False}, False, "a matrix product on it came out wrong"),
    ("tpu", {"error": "RuntimeError: no TPU"}, False, "JAX could not use it: RuntimeError: no TPU"),
    ("gpu", None, False, "the kernel reported nothing (its cell: ok)"),
])
def test_each_rule(monkeypatch, device, found, works, why):
    monkeypatch.setattr(device_check, "_DONE", {})
    monkeypatch.setattr(execution, "execute", _printing(found, []))
    checked = device_check.check(device, REPORT, Limits())
    assert (checked.works, checked.why) == (works, why)
    if works:
        assert (checked.kind, checked.count, checked.precision) == ("NVIDIA H100", 1, "highest")
        assert device_check.used(checked) == "gpu"


def test_the_check_runs_once_per_device_and_gets_room_for_a_cold_start(monkeypatch):
    calls = []
    monkeypatch.setattr(device_check, "_DONE", {})
    monkeypatch.setattr(execution, "execute", _printing({"backend": "cuda", "kind": "k", "count": 2, "computed": True}, calls))
    first = device_check.check("gpu", REPORT, Limits(cell_timeout=1))
    again = device_check.check("gpu", REPORT, Limits(cell_timeout=1))
    assert first is again and len(calls) == 1 and device_check.used(first) == "gpu"  # cuda counts as gpu
    assert calls[0].cell_timeout == device_check.SECONDS


def test_a_kernel_that_does_not_start_is_the_answer_not_a_crash(monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("no bwrap")

    monkeypatch.setattr(device_check, "_DONE", {})
    monkeypatch.setattr(execution, "execute", broken)
    checked = device_check.check("gpu", REPORT, Limits())
    assert not checked.works and checked.why == "the kernel did not start (OSError: no bwrap)"
