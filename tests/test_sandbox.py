"""Hostile submissions: student code can neither cheat, nor leak, nor hurt the host.

Every attack here is bounded (short timeouts, the sandbox's rlimits), targets
only loopback, and the test checks the host afterwards. Skipped where the host
has no bubblewrap; CI installs it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import FAST, SEED, full_marks, patched_solution, statuses, write

from grader import grading
from grader.base.errors import SandboxUnavailable
from grader.kernel import devices, leftovers, managers, sandbox, zygote
from grader.lesson import catalog, handout
from grader.lesson.draw import Given
from grader.result import gradebook

LESSON = "inference-capacity"
HOSTILE = Path(__file__).parent / "submissions" / "hostile"
needs_bwrap = pytest.mark.skipif(
    sandbox.plan(FAST).mode != "bwrap", reason="bubblewrap sandbox unavailable on this host (CI installs it)")
pytestmark = [pytest.mark.sandbox, pytest.mark.kernel, needs_bwrap]


def _grade(tmp_path: Path, name: str, limits=FAST, warm: bool = False, **fill: str) -> dict:
    text = (HOSTILE / f"{name}.py").read_text()
    for key, value in fill.items():
        text = text.replace(f"__{key}__", value)
    path = write(patched_solution(LESSON, text), tmp_path / f"{name}.ipynb")
    options = grading.Options(limits=limits, sandbox="bwrap", require_sandbox=True, zygote=warm)
    result = grading.grade(path, LESSON, options, None, Given(seed=SEED)).to_dict()
    assert result["sandbox"]["mode"] == ("bwrap+zygote" if warm else "bwrap")
    return result


# The same attacks against both launch paths: a fresh bubblewrap kernel, and a
# kernel forked from the warm zygote that batch grading uses.
both = pytest.mark.parametrize("warm", [False, True], ids=["fresh", "zygote"])


def test_every_layer_is_reported_in_force(graded):
    box = graded.solution(LESSON)["sandbox"]
    assert box["mode"] == "bwrap" and box["missing"] == [] and box["isolated"] is True
    assert set(box["layers"]) == set(sandbox.LAYERS) and all(box["layers"].values())
    assert box["runs_as"] == ("root" if os.geteuid() == 0 else "user") and box["rootless"] is (os.geteuid() != 0)
    # this kind of host delegates no cgroup: the result says so instead of claiming a bound it does not hold
    assert box["budgets"]["own_user_namespace"] is True
    assert box["budgets"]["cgroup"] is False and "RLIMIT_AS" in box["reasons"]["cgroup"]


@both
def test_no_tcp_to_the_hosts_loopback(tmp_path, warm):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    try:
        result = _grade(tmp_path, "connects-to-host-loopback", warm=warm, PORT=str(listener.getsockname()[1]))
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    finally:
        listener.close()
    assert statuses(result)["p95-interpolation"] == "passed"


@both
def test_solutions_are_invisible_and_copying_them_fails(tmp_path, warm):
    answers = catalog.get(LESSON).solutions / "answers.py"
    result = _grade(tmp_path, "copies-the-reference", warm=warm, ANSWERS=str(answers.resolve()))
    got = statuses(result)
    for ex in ("queue-hand-check", "invalid-timeline"):
        assert got[ex] in ("failed", "error"), ex


@both
def test_no_writes_to_home_outputs_or_gradebook(tmp_path, warm):
    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    book = gradebook.Gradebook(out / "gradebook.sqlite")
    book.add({"lesson": LESSON, "student": "amy", "status": "graded", "score": 1.0, "max_score": 9.0,
              "graded_at": "t"}, "d")
    book.close()
    home = Path(os.path.expanduser("~"))
    marker = home / "grader-was-here.txt"
    marker.unlink(missing_ok=True)
    result = _grade(tmp_path, "writes-outside-scratch", warm=warm, HOME=str(home), OUT=str(out),
                    GRADEBOOK=str(out / "gradebook.sqlite"))
    assert statuses(result)["batch-collection"] == "passed"
    assert not marker.exists()
    assert list((out / "results").iterdir()) == []
    with sqlite3.connect(str(out / "gradebook.sqlite")) as db:
        assert db.execute("SELECT score FROM grades").fetchall() == [(1.0,)]


@both
def test_a_60_gb_allocation_is_an_error_and_the_host_is_fine(tmp_path, warm):
    before = _available_kib()
    result = _grade(tmp_path, "allocates-60-gb", warm=warm)
    replica = next(e for e in result["exercises"] if e["id"] == "replica-plan")
    assert replica["status"] == "error" and "MemoryError" in replica["messages"][0]
    assert sum(1 for st in statuses(result).values() if st == "passed") == 8
    assert _available_kib() > before - 2 * 1024**2  # within 2 GiB of where it was


def _available_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable"):
            return int(line.split()[1])
    raise AssertionError("no MemAvailable")


def _procs_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@both
def test_daemons_are_gone_after_grading(tmp_path, warm):
    mark = f"31{uuid.uuid4().int % 10**6:06d}"  # `sleep 31xxxxxx1` etc.: a unique, harmless duration
    try:
        result = _grade(tmp_path, "daemon-with-new-session", warm=warm, MARK=mark)
        assert statuses(result)["p95-interpolation"] == "passed"
        time.sleep(0.5)
        assert _procs_with(f"sleep {mark}") == []
    finally:
        for pid in _procs_with(f"sleep {mark}"):
            os.kill(pid, 9)


@both
def test_exits_and_crashes_are_recorded_for_their_exercise(tmp_path, warm):
    result = _grade(tmp_path, "exits-and-crashes", warm=warm)
    got = statuses(result)
    assert got["replica-plan"] == "error"       # os._exit inside plan_replicas
    assert got["deadline"] == "error"           # segfault inside count_missed
    assert got["p95-interpolation"] == "error"  # sys.exit() before the name was defined
    assert {ex: st for ex, st in got.items() if ex not in ("replica-plan", "deadline", "p95-interpolation")} == dict.fromkeys(("measure", "queue-hand-check", "burst", "burst-sensitivity", "invalid-timeline", "batch-collection"), "passed")
    assert any("replica-plan" in note for note in result["notes"])
    assert result["run"]["attempts"] == 3
    after = _grade(tmp_path, "connects-to-host-loopback", warm=warm, PORT="9")  # the next submission grades normally
    assert after["score"] == 9.0


@both
def test_an_interrupt_ignoring_loop_is_stopped(tmp_path, warm):
    limits = replace(FAST, cell_timeouts=(("answer-batch-collection", 2),), notebook_timeout=60)
    began = time.monotonic()
    result = _grade(tmp_path, "ignores-interrupt", limits=limits, warm=warm)
    assert statuses(result)["batch-collection"] == "timeout"
    assert sum(1 for st in statuses(result).values() if st == "passed") == 8
    assert time.monotonic() - began < limits.notebook_timeout  # stopped by the grader, not by the test


def test_the_notebook_watchdog_ends_a_run_at_its_deadline(tmp_path):
    limits = replace(FAST, cell_timeout=120, probe_timeout=120, cell_timeouts=(), notebook_timeout=10)
    result = _grade(tmp_path, "ignores-interrupt", limits=limits)
    assert result["run"]["deadline_hit"] is True
    assert statuses(result)["batch-collection"] == "timeout"
    assert result["run"]["seconds"] < 10 + 15  # the deadline plus kernel teardown, well before the cell timeout


def test_a_200_mb_flood_is_recorded_and_the_grader_stays_small(tmp_path):
    path = write(patched_solution(LESSON, (HOSTILE / "floods-output.py").read_text()), tmp_path / "flood.ipynb")
    program = (
        "import json, sys\n"
        # VmHWM is this process's own peak: ru_maxrss would also count the forking test process's resident size
        "def peak_mb():\n"
        "    line = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "    return int(line.split()[1]) / 1024\n"
        "from grader import grading\n"
        "from grader.base.limits import Limits\n"
        "from grader.lesson.draw import Given\n"
        "r = grading.grade(sys.argv[1], 'inference-capacity', grading.Options(limits=Limits(cell_timeout=10),"
        " sandbox='bwrap'), None, Given(seed=1)).to_dict()\n"
        "print(json.dumps({'run': r['run'], 'score': r['score'], 'statuses': {e['id']: e['status'] for e in r['exercises']},"
        " 'peak_mb': peak_mb()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", program, str(path)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["run"]["flood"] is True
    assert report["peak_mb"] < 200
    # the flooding cell is dropped on the rerun, so the name it would have defined is missing
    assert report["statuses"]["p95-interpolation"] == "error"
    assert report["score"] == 8.0


def test_require_sandbox_refuses_when_a_layer_is_missing(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        sandbox.plan(FAST, "auto", require=True)
    assert sandbox.plan(FAST, "auto").missing_reason


def test_without_bwrap_the_result_says_which_layers_are_missing(monkeypatch, tmp_path, make_notebook):
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    path = make_notebook("x = 1")
    options = grading.Options(limits=FAST, public_only=True)
    if os.geteuid() == 0 and sandbox.plan(FAST).mode != "nobody":
        # root, and nobody cannot run this Python: the kernel is never run as root unless asked
        with pytest.raises(SandboxUnavailable, match="refusing to run student code as root"):
            grading.grade(path, LESSON, options)
        options = dataclasses.replace(options, sandbox="none")
    result = grading.grade(path, LESSON, options).to_dict()
    assert result["sandbox"]["mode"] in (("nobody", "process") if os.geteuid() == 0 else ("process",))
    assert result["sandbox"]["kernel_as"] == {"nobody": "nobody", "process": "root" if os.geteuid() == 0 else "user"}[
        result["sandbox"]["mode"]]
    assert "network" in result["sandbox"]["missing"] and result["sandbox"]["missing_reason"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run the kernel as nobody without namespaces")
def test_without_namespaces_root_still_runs_the_kernel_as_nobody(monkeypatch, tmp_path, make_notebook):
    # a container with no user namespaces (Gradescope's, say): solutions readable by root only stay unreadable
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    secret = tmp_path / "solutions" / "answers.py"
    secret.parent.mkdir()
    secret.write_text("the reference")
    secret.parent.chmod(0o700)
    tmp_path.chmod(0o755)
    probe = (f"import os\ntry:\n    open({str(secret)!r}).read()\n    seen = 'read it'\n"
             f"except PermissionError:\n    seen = 'refused'\nprint('uid', os.getuid(), seen)")
    path = make_notebook(probe)
    if sandbox.plan(FAST).mode != "nobody":
        pytest.skip("nobody cannot run this Python installation (it lives under a private folder)")
    result = grading.grade(path, LESSON, grading.Options(limits=FAST, public_only=True), None, Given(seed=1))
    assert result.to_dict()["sandbox"]["mode"] == "nobody"
    assert result.to_dict()["sandbox"]["layers"]["user"] is True
    printed = "".join(o.get("text", "") for o in result.notebook.cells[0].outputs)
    assert f"uid {sandbox.NOBODY} refused" in printed, printed


def test_zygote_kernels_start_fresh_and_see_only_their_own_dirs(make_notebook):
    import nbformat

    from grader.run import execution

    report = sandbox.plan(FAST)
    first = nbformat.read(str(make_notebook(
        "import builtins, numpy as np, sys\nbuiltins.leak = 1\nnp.leak = 1\nsys.modules['leaky'] = np\nsecret = 42")), 4)
    second = nbformat.read(str(make_notebook(
        "import builtins, numpy as np, os, sys\n"
        "print(hasattr(builtins, 'leak'), hasattr(np, 'leak'), 'leaky' in sys.modules, 'secret' in globals())\n"
        "print(os.getuid(), os.getpid(), sorted(os.listdir('/tmp')))\n"
        "root = '/tmp/' + [d for d in os.listdir('/tmp') if d.startswith('grader-')][0]\n"
        "print(sorted(os.listdir(root)), len(os.listdir(root + '/run')), len(os.listdir(root + '/scratch')))\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])")), 4)
    outputs = []
    for notebook in (first, second):
        done = execution.execute(notebook, [], FAST, lambda: managers.forked(report, FAST))
        outputs.append("".join(o.get("text", "") for c in done.notebook.cells for o in c.get("outputs", [])))
    lines = outputs[1].splitlines()
    assert lines[0] == "False False False False"             # nothing of the first notebook survives
    uid, pid, tmp = lines[1].split(" ", 2)
    assert (uid, pid) == ("65534", "2")
    assert lines[2] == "['run', 'scratch'] 1 1"              # no zygote socket or code, no other kernel's dirs
    assert lines[3] == "0000000000000000"                     # no effective capabilities


def _worker_kernel(queue) -> None:
    """Runs in a forked worker: grade a tiny notebook with whatever zygote this process has."""
    import nbformat

    from grader.kernel import zygote
    from grader.run import execution

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    done = execution.execute(notebook, [], FAST, lambda: managers.forked(sandbox.plan(FAST), FAST))
    queue.put((str(zygote.shared(FAST).home), "".join(o.get("text", "") for o in done.notebook.cells[0].outputs)))


def test_a_zygote_started_before_forking_serves_every_worker_and_outlives_them():
    import multiprocessing

    from grader.kernel import zygote

    template = zygote.shared(FAST)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_worker_kernel, args=(queue,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    answers = [queue.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert answers == [(str(template.home), "42\n")] * 2  # both used the parent's zygote, and it worked
    assert template.alive() and template.home.is_dir()     # a worker's exit does not stop it
    assert len(list(sandbox.run_root().glob(f"zygote-{os.getpid()}-*"))) == 1


def test_homes_of_dead_zygotes_are_swept_and_live_ones_kept(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"zygote-{finished.stdout.strip()}-abc123"
    live = tmp_path / f"zygote-{os.getpid()}-def456"
    for home in (dead, live):
        (home / "code").mkdir(parents=True)
    leftovers.sweep_stale(tmp_path)
    assert not dead.exists() and live.is_dir()


@both
def test_every_kernel_has_a_user_namespace_and_no_terminal_of_its_own(make_notebook, warm):
    """Two kernels alive at the same time have two user namespaces. (Compared one after the other, a freed
    namespace's inode number can be handed to the next one, and "shared" could not be told from "reused".)"""
    import threading

    import nbformat

    from grader.run import execution

    report = sandbox.plan(FAST)
    tag = uuid.uuid4().hex[:8]
    holder = nbformat.read(str(make_notebook(
        "import os, time\n"
        f"ns = os.readlink('/proc/self/ns/user')\nopen('held-{tag}', 'w').write(ns)\n"
        "deadline = time.monotonic() + 100\n"
        f"while not os.path.exists('release-{tag}') and time.monotonic() < deadline:\n    time.sleep(0.05)\n"
        "print(ns, time.monotonic() < deadline)")), 4)
    notebook = nbformat.read(str(make_notebook(
        "import os, resource\n"
        "print(os.readlink('/proc/self/ns/user'), resource.getrlimit(resource.RLIMIT_NPROC)[0])\n"
        "try:\n    os.open('/dev/tty', os.O_RDWR)\n    print('tty')\nexcept OSError as err:\n    print(err.errno)")), 4)
    slow = replace(FAST, cell_timeout=120, notebook_timeout=150)
    make = (lambda: managers.forked(report, slow)) if warm else (lambda: managers.started(report, slow))
    held: list[Any] = []
    thread = threading.Thread(target=lambda: held.append(execution.execute(holder, [], slow, make)))
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while not list(sandbox.run_root().glob(f"scratch/*/held-{tag}")) and time.monotonic() < deadline:
            time.sleep(0.05)
        marker = next(iter(sandbox.run_root().glob(f"scratch/*/held-{tag}")))
        done = execution.execute(notebook, [], FAST, make)   # while the holder's kernel is still alive
        (marker.parent / f"release-{tag}").write_text("")
    finally:
        thread.join(timeout=150)
    first = "".join(o.get("text", "") for o in held[0].notebook.cells[0].outputs).split()
    second = "".join(o.get("text", "") for o in done.notebook.cells[0].outputs).split()
    assert first[1] == "True"  # the holder was released by the test, so both kernels were alive at once
    assert first[0] != second[0] != os.readlink("/proc/self/ns/user")  # one namespace per kernel
    assert second[1] == str(FAST.processes)
    assert second[2] == "6"  # ENXIO: no controlling terminal to type into


def test_a_kernel_cannot_type_into_the_terminal_of_grade(tmp_path):
    if shutil.which("script") is None:
        pytest.skip("util-linux `script` is not installed")
    mark = f"typed-{uuid.uuid4().hex[:8]}"
    text = (HOSTILE / "types-into-the-terminal.py").read_text().replace("__MARK__", mark)
    path = write(patched_solution(LESSON, text), tmp_path / "tty.ipynb")
    grader = str(Path(sys.executable).with_name("grader"))
    shown = subprocess.run(["script", "-qec", f"'{grader}' grade '{path}' --lesson {LESSON} --cell-timeout 30",
                            "/dev/null"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stdout[-2000:]
    assert "9 / 12" in shown.stdout and mark not in shown.stdout  # 9 autograded; 3 written points wait for review


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory):
    """The lesson's compilation cache, filled once into a folder of this test module's own."""
    from grader.kernel import compile_cache

    patch = pytest.MonkeyPatch()
    patch.setenv("GRADER_CACHE", str(tmp_path_factory.mktemp("grader-cache")))
    try:
        yield compile_cache.ensure(catalog.get(LESSON), "cpu")
    finally:
        patch.undo()


@both
def test_kernels_read_the_compilation_cache_and_none_can_write_it(filled_cache, make_notebook, warm):
    import nbformat

    from grader.run import execution

    assert filled_cache and any(Path(filled_cache).iterdir())
    before = sorted(p.name for p in Path(filled_cache).iterdir())
    given = handout.given_cells_in_order(catalog.get(LESSON))
    probe = (
        "import os, jax.monitoring\n"
        "events = []\n"
        "jax.monitoring.register_event_listener(lambda event, **kw: events.append(event))\n"
        "infer(np.zeros((13, 64), np.float32)).block_until_ready()\n"
        "print('hit' if '/jax/compilation_cache/cache_hits' in events else 'miss')\n"
        f"folder = {devices.COMPILE_CACHE_TARGET!r}\n"
        "for attempt in ('open(folder + \"/planted-cache\", \"wb\")', 'os.remove(folder + \"/\" + os.listdir(folder)[0])',\n"
        "                'os.chmod(folder, 0o777)'):\n"
        "    try:\n"
        "        eval(attempt)\n"
        "        print('done')\n"
        "    except OSError as err:\n"
        "        print('refused', err.errno)\n")
    notebook = nbformat.read(str(make_notebook(*given, probe)), 4)
    start = devices.KernelStart(device="cpu", warm_imports=("numpy", "jax", "jax.numpy"), compile_cache=filled_cache)
    report = sandbox.plan(FAST)
    make = (lambda: managers.forked(report, FAST, start)) if warm else (lambda: managers.started(report, FAST, start))
    done = execution.execute(notebook, [], FAST, make)
    lines = "".join(o.get("text", "") for o in done.notebook.cells[-1].get("outputs", [])).split()
    assert lines[0] == "hit"                          # the shape was compiled once, before any kernel ran
    assert lines[1:] == ["refused", "30"] * 3          # EROFS: nothing can be added, removed or opened up
    assert sorted(p.name for p in Path(filled_cache).iterdir()) == before


def test_a_forked_kernel_starts_with_the_traceback_machinery_warm(tmp_path):
    """The zygote formats one traceback before it serves, so a kernel's first error does not index every module."""
    patch = ("# %% id=extra-first-error\nimport inspect, sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    pass\n"
             "print('warm', len(inspect.modulesbyfile) > 200, 'stack_data' in sys.modules)\n")
    path = write(patched_solution(LESSON, patch), tmp_path / "warm.ipynb")
    options = grading.Options(limits=FAST, sandbox="bwrap", require_sandbox=True, zygote=True)
    notebook = grading.grade(path, LESSON, options, None, Given(seed=SEED)).notebook
    (cell,) = [c for c in notebook.cells if c.get("id") == "extra-first-error"]
    assert "".join(o.get("text", "") for o in cell.outputs).strip() == "warm True True"


def _scaling(tmp_path: Path, name: str, notebook, seed: int = SEED) -> tuple[dict, Any]:
    path = write(notebook, tmp_path / f"{name}.ipynb")
    options = grading.Options(limits=FAST, sandbox="bwrap", require_sandbox=True, zygote=True)
    result = grading.grade(path, "inference-scaling", options, None, Given(seed=seed))
    return result.to_dict(), result.notebook


def _last_output(notebook) -> str:
    return "".join(o.get("text", "") for o in notebook.cells[-1].outputs).strip()


def test_a_kernel_started_from_the_warm_cells_shares_their_globals(tmp_path):
    """The zygote ran the lesson's leading given cells; the kernel's globals are the namespace they defined their
    functions in, so a student who rebinds a global changes what the given code does, as in a kernel that ran them."""
    notebook = handout.solution_notebook(catalog.get("inference-scaling"))
    notebook.cells.append(nbformat.v4.new_code_cell(
        "THRESHOLD = 10**9\nprint(process_group.__code__.co_filename, label({'m3': 100}), In[2][:11], _i3[:10])"))
    result, executed = _scaling(tmp_path, "rebinds", notebook)
    assert _last_output(executed) == "<given cell 3> 0 # FICTIONAL # Serving:"  # process_group: the third
    assert [c.execution_count for c in executed.cells if c.cell_type == "code"] == list(range(1, 11))  # 9 cells + 1
    assert full_marks(result)


def test_a_notebook_that_changed_a_warm_cell_runs_them_all_itself(tmp_path):
    notebook = handout.solution_notebook(catalog.get("inference-scaling"))
    pipeline = next(c for c in notebook.cells if c.get("id") == "given-pipeline")
    pipeline.source += "\n# read twice\n"
    notebook.cells.append(nbformat.v4.new_code_cell("print(process_group.__code__.co_filename.startswith('/tmp/'))"))
    result, executed = _scaling(tmp_path, "changed", notebook)
    assert _last_output(executed) == "True"
    assert full_marks(result)


@pytest.mark.parametrize("cells, used", [(("X = 1", "Y = X + 1"), True), (("X = 1", "print(X)"), False),
                                         (("X = 1 / 0",), False), (("%time X = 1",), False)])
def test_warm_cells_that_raise_print_or_need_ipython_are_left_to_each_kernel(cells, used):
    template = zygote.Zygote(FAST, start=devices.KernelStart(warm_cells=cells))
    try:
        assert template.warm_cells is used
    finally:
        template.stop()


def test_a_template_started_by_the_command_line_is_the_one_the_batch_forks_from():
    """warm_start.start (what `grader batch` calls before its imports) and worker.prepare (what the batch
    calls after them) agree on the template: one zygote, started once, ready when prepare returns."""
    from grader.classroom import workers as worker
    from grader.kernel import warm_start
    from grader.lesson import catalog

    options = grading.Options(limits=FAST, sandbox="bwrap", require_sandbox=True, zygote=True)
    early = warm_start.start(catalog.get("inference-scaling"), options, 1234)
    assert early is not None and early.start.hash_seed == 1234
    homes = set(sandbox.run_root().glob(f"zygote-{os.getpid()}-*"))
    worker.prepare(catalog.get("inference-scaling"), options, 1234)
    assert set(sandbox.run_root().glob(f"zygote-{os.getpid()}-*")) == homes and early.home in homes  # none started
    assert zygote.shared(FAST, early.start) is early and early.ready and early.alive()
    assert warm_start.start(catalog.get("inference-scaling"), replace(options, zygote=False), 1234) is None
