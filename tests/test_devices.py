"""Accelerators, provable on a CPU-only host: a stand-in GPU that no driver answers is refused in one line (or
graded on the CPU when falling back is asked for, and the receipt says so), a GPU kernel's memory is bounded by
RLIMIT_DATA rather than an address-space limit with every other layer still in force, and every kernel computes
at full matmul precision. No test here needs a GPU; `bench/device_check.sh` is the check on a real one."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from conftest import FAST, SEED, write

from grader import cli
from grader.base.limits import Limits
from grader.kernel import devices, launch, managers, sandbox
from grader.lesson import catalog, handout
from grader.run import execution

LESSON = "inference-capacity"
pytestmark = [pytest.mark.kernel, pytest.mark.sandbox]
needs_bwrap = pytest.mark.skipif(sandbox.plan(Limits()).mode != "bwrap",
                                 reason="bubblewrap sandbox unavailable on this host (CI installs it)")


@pytest.fixture
def stand_in_gpu(tmp_path, monkeypatch) -> Path:
    """A device folder with an `nvidia0` and an `nvidiactl` that no driver answers (a character device of a major
    number reserved for local use), which the grader is pointed at instead of /dev; no real node is touched."""
    folder = tmp_path / "dev"
    folder.mkdir()
    try:
        for minor, name in enumerate(("nvidia0", "nvidiactl")):
            os.mknod(folder / name, 0o666 | 0o020000, os.makedev(240, minor))
    except PermissionError:
        pytest.skip("making a device node needs root")
    monkeypatch.setenv("GRADER_DEVICE_DIR", str(folder))
    return folder


def run_cli(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


@needs_bwrap
def test_a_gpu_that_does_not_work_is_refused_in_one_line_or_fallen_back_from(stand_in_gpu, tmp_path):
    solution = write(handout.solution_notebook(catalog.get(LESSON)), tmp_path / "reference.ipynb")
    refused = run_cli("grade", solution, "--lesson", LESSON, "--device", "gpu", "--json", tmp_path / "refused.json")
    assert refused.exit_code == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.output
    assert "--device gpu does not work in a sandboxed kernel here" in refused.stderr
    assert json.loads((tmp_path / "refused.json").read_text())["status"] == "rejected"

    fell = run_cli("grade", solution, "--lesson", LESSON, "--device", "gpu", "--device-fallback", "--seed", SEED,
                   "--json", tmp_path / "fell.json")
    assert fell.exit_code == 0, fell.output
    result = json.loads((tmp_path / "fell.json").read_text())
    env = result["environment"]
    assert (result["score"], result["max_score"]) == (9.0, 12.0)  # every exercise; the written part waits for review
    assert env["device_requested"] == "gpu" and env["device_used"] == "cpu" and env["device_fell_back"] is True
    assert "Unable to initialize backend 'cuda'" in env["device_fallback_reason"]
    assert env["jax_backend"] == "cpu" and "jax_backend" in env["reported_by_kernel"]  # the kernel's word, labelled


@needs_bwrap
def test_a_gpu_batch_that_does_not_work_stops_before_any_grade(stand_in_gpu, tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    write(handout.solution_notebook(catalog.get(LESSON)), folder / "ada.ipynb")
    done = run_cli("batch", folder, "--lesson", LESSON, "--out", tmp_path / "out", "--device", "gpu")
    assert done.exit_code == 2 and "does not work in a sandboxed kernel" in done.stderr
    assert not (tmp_path / "out" / "results").exists() or not list((tmp_path / "out" / "results").iterdir())



def test_a_gpu_batch_runs_at_most_its_share_of_jobs_per_device(stand_in_gpu, monkeypatch):
    monkeypatch.setattr(devices.os, "cpu_count", lambda: 16)  # a GPU host's cores: the CPU alone would allow more
    assert devices.default_jobs("cpu") > 4
    assert devices.default_jobs("gpu") == 4  # one stand-in GPU, four jobs on it
    os.mknod(stand_in_gpu / "nvidia1", 0o666 | 0o020000, os.makedev(240, 2))
    assert devices.default_jobs("gpu") == min(8, devices.default_jobs("cpu"))


PROBE = """
import json, os, resource, socket, subprocess
import numpy as np
facts = {"as": resource.getrlimit(resource.RLIMIT_AS)[0], "data": resource.getrlimit(resource.RLIMIT_DATA)[0],
         "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0], "uid": os.getuid(), "pid": os.getpid(),
         "node": os.path.exists("/dev/nvidia0"), "interfaces": sorted(name for _, name in socket.if_nameindex()),
         "caps": open("/proc/self/status").read().split("CapEff:")[1].split()[0],
         "precision": os.environ.get("JAX_DEFAULT_MATMUL_PRECISION"),
         "preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")}
try:
    small = np.ones(50 * 2**20 // 8)
    facts["small"] = "allocated"
except MemoryError:
    facts["small"] = "refused"
try:
    bomb = np.ones(8 * 2**30 // 8)
    facts["bomb"] = "allocated"
except MemoryError:
    facts["bomb"] = "refused"
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1)
    facts["loopback"] = "reached"
except OSError:
    facts["loopback"] = "unreachable"
print(json.dumps(facts))
"""


@needs_bwrap
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_a_gpu_kernels_memory_bound_is_no_address_space_limit_and_every_other_layer_holds(stand_in_gpu, device):
    report = sandbox.plan(FAST)
    limits = replace(FAST, cell_timeout=60)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE)])
    done = execution.execute(notebook, [], limits, lambda: managers.started(report, limits,
                                                                          devices.KernelStart(device=device)))
    printed = "".join(o.get("text", "") for o in done.notebook.cells[0].outputs if o.get("output_type") == "stream")
    facts = json.loads(printed.strip().splitlines()[-1])
    infinity = -1  # resource.RLIM_INFINITY as the kernel's Python prints it
    if device == "gpu":
        assert facts["as"] == infinity and facts["data"] == limits.memory_bytes  # the driver's reservations are free
        assert facts["node"] is True and facts["preallocate"] == "false"
    else:
        assert facts["as"] == limits.memory_bytes and facts["node"] is False and facts["preallocate"] is None
    assert facts["small"] == "allocated" and facts["bomb"] == "refused"       # a memory bomb is still stopped
    assert facts["uid"] == sandbox.NOBODY and facts["pid"] < 10 and facts["caps"] == "0000000000000000"
    assert facts["nproc"] == limits.processes and facts["interfaces"] in (["lo"], [])
    assert facts["loopback"] == "unreachable" and facts["precision"] == "highest"


@pytest.mark.parametrize("lesson_id", ["inference-capacity", "dynamic-batching"])
def test_the_handout_of_a_lesson_that_runs_the_network_asks_for_full_precision_and_says_why(tmp_path, lesson_id):
    released = handout.release(lesson_id, tmp_path)
    text = Path(released).read_text()
    assert 'jax.config.update(\\"jax_default_matmul_precision\\", \\"highest\\")' in text
    assert "seed's tolerance" in text or "agrees with NumPy" in text
    assert launch.kernel_env(tmp_path)["JAX_DEFAULT_MATMUL_PRECISION"] == "highest"  # notebooks handed out before
