"""Gradescope's container path, attacked: a folder laid out like /autograder, a hostile submission, and the
three ways a container can be: bubblewrap works, bubblewrap is installed but denied, and no namespaces at all
with the grader readable by nobody (as setup.sh leaves it). The sandbox is chosen by trial, student code never
runs as root unless the instructor says so, and the results are written after every process of the student's
is gone, where the student cannot write."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import jsonschema
import pytest
from conftest import patched_solution, write

from grader.base.limits import Limits
from grader.classroom import gradescope
from grader.kernel import launch, sandbox

HERE = Path(__file__).parent
LESSON = "inference-scaling"
SCHEMA = json.loads((HERE / "schemas" / "gradescope-results.json").read_text())
HOLD = 4
pytestmark = [pytest.mark.kernel, pytest.mark.sandbox]
needs_bwrap = pytest.mark.skipif(sandbox.plan(Limits()).mode != "bwrap",
                                 reason="bubblewrap sandbox unavailable on this host (CI installs it)")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the kernel is run as nobody only by root")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return gradescope.bundle(LESSON, tmp_path_factory.mktemp("gs")) / "autograder.zip"


@pytest.fixture
def denied_bwrap(tmp_path) -> Path:
    """A folder holding a `bwrap` that fails as a container's does when it may not make namespaces."""
    folder = tmp_path / "denied-bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return folder


def _layout(bundle: Path, root: Path, submission: Path | None = None) -> Path:
    """`root` laid out as Gradescope's /autograder: the bundle in source/, the submission in submission/."""
    gradescope.unpack_bundle(bundle, root)
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir(mode=0o777)
    if submission is not None:
        shutil.copy(submission, root / "submission" / submission.name)
    return root


def _hostile(tmp_path: Path, root: Path) -> tuple[Path, str]:
    mark = f"gs-escape-{uuid.uuid4().hex[:8]}"
    text = (HERE / "submissions" / "hostile" / "escapes-the-container.py").read_text()
    fills = {"SECRET": str(root / "source" / "course" / "solutions" / LESSON / "answers.py"), "HOLD": str(HOLD),
             "RESULTS": str(root / "results" / "results.json"), "MARK": mark}
    for key, value in fills.items():
        text = text.replace(f"__{key}__", value)
    return write(patched_solution(LESSON, text), tmp_path / "escape.ipynb"), mark


def _run(root: Path, prefix: list[str] = (), **env: str) -> dict:
    environment = dict(os.environ, AUTOGRADER_ROOT=str(root), GRADER_PYTHON=sys.executable, **env)
    done = subprocess.run([*prefix, str(root / "source" / "run_autograder")], env=environment,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(data, SCHEMA)
    return data


def _alive(mark: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def _after_the_daemon(root: Path, mark: str) -> dict:
    """The results once the daemon would have struck; any daemon still alive is a failure (and is ended)."""
    time.sleep(HOLD + 1)
    left = _alive(mark)
    for pid in left:
        os.kill(pid, 9)
    assert left == [], "a process of the student's outlived the grade"
    return json.loads((root / "results" / "results.json").read_text())


@needs_bwrap
def test_with_bubblewrap_a_hostile_submission_reaches_nothing(bundle, tmp_path):
    root = _layout(bundle, tmp_path / "autograder")
    notebook, mark = _hostile(tmp_path, root)
    shutil.copy(notebook, root / "submission" / notebook.name)
    data = _run(root)
    assert data["score"] == 3.0 and "FORGED" not in json.dumps(data)
    assert "Isolation: sandbox bwrap" in data["output"] and "not held" not in data["output"]
    assert _after_the_daemon(root, mark) == data
    assert (root / "results").stat().st_mode & 0o777 == 0o755


def test_a_linked_submission_is_refused_not_followed(bundle, tmp_path):
    root = _layout(bundle, tmp_path / "autograder")
    (root / "submission" / "answers.ipynb").symlink_to(root / "source" / "course" / "solutions" / LESSON / "solution.ipynb")
    data = _run(root)
    assert data["score"] == 0 and data["tests"] == []
    assert "symbolic link" in data["output"] and "Not graded" in data["output"]


@root_only
def test_with_bubblewrap_denied_and_nobody_unable_to_run_python_student_code_never_runs_as_root(
        bundle, tmp_path, denied_bwrap):
    if sandbox._works(*launch.setpriv_argv(), "prlimit", "--core=0", "--", sandbox.python(), "-c", "import ipykernel"):
        pytest.skip("nobody can run this Python installation here (see the container test below)")
    root = _layout(bundle, tmp_path / "autograder", HERE.parent / "samples" / LESSON / "ada.ipynb")
    path = f"{denied_bwrap}:{os.environ['PATH']}"
    refused = _run(root, PATH=path)
    assert refused["score"] == 0 and "refusing to run student code as root" in refused["output"]
    assert "bubblewrap is installed but could not start a sandbox here" in refused["output"]
    allowed = _run(root, PATH=path, GRADER_ALLOW_ROOT_KERNEL="1")
    assert allowed["score"] == 3.0
    assert "the kernel ran as root (without isolation: GRADER_ALLOW_ROOT_KERNEL=1 allowed it)" in allowed["output"]


_PYTHON = [Path(sys.base_prefix), Path(sys.prefix), Path(__import__("grader").__file__).resolve().parent]
"""What a container's setup.sh makes readable by nobody: the interpreter, its environment and the grader's package
(from any clone: a checkout inside a folder only its owner may enter still serves nobody its package)."""


def _container(argv: list[str], readable: list[Path]) -> list[str]:
    """`argv` in a mount namespace of its own where each folder of `readable` can be read by others (a folder
    above it that others may not enter is replaced by an empty one holding only it): a container whose setup.sh
    made the grader's Python readable by nobody, without changing a mode bit on this host."""
    covered: dict[Path, list[Path]] = {}
    for path in readable:
        path = path.resolve()
        for ancestor in [*reversed(path.parents), path]:
            if ancestor != Path("/") and ancestor.stat().st_mode & 0o005 != 0o005:
                covered.setdefault(ancestor, []).append(path)
                break
    prefix = [shutil.which("bwrap") or "bwrap", "--dev-bind", "/", "/"]
    for ancestor, paths in covered.items():
        prefix += ["--perms", "0755", "--tmpfs", str(ancestor)]
        for path in paths:
            between = [p for p in reversed(path.parents) if ancestor in p.parents]
            for folder in between:
                prefix += ["--perms", "0755", "--dir", str(folder)]
            prefix += ["--bind", str(path), str(path)]
    return prefix + ["--", *argv]


@root_only
@needs_bwrap
def test_without_namespaces_the_kernel_runs_as_nobody_and_nothing_it_leaves_outlives_the_grade(
        bundle, tmp_path, denied_bwrap):
    root = _layout(bundle, tmp_path / "autograder")
    notebook, mark = _hostile(tmp_path, root)
    shutil.copy(notebook, root / "submission" / notebook.name)
    prefix = _container([], _PYTHON)[:-1] + ["--"]
    data = _run(root, prefix, PATH=f"{denied_bwrap}:{os.environ['PATH']}")
    assert data["score"] == 3.0, data["output"]
    assert "Isolation: sandbox nobody, the kernel ran as nobody" in data["output"]
    for layer in ("network", "pid_namespace", "filesystem"):
        assert f"not held: {layer}" in data["output"]
    executed = json.loads((root / "results" / "results.json").read_text())
    assert _after_the_daemon(root, mark) == executed and "FORGED" not in json.dumps(executed)


@root_only
@needs_bwrap
def test_nothing_of_nobodys_outlives_the_grade_and_the_platforms_record_is_closed(bundle, tmp_path, denied_bwrap):
    """Findings 11a and 11b: a process whose leader left by raw SYS_exit is ended (by user, not by ancestry), and
    the kernel cannot read submission_metadata.json."""
    import tempfile

    root = _layout(bundle, tmp_path / "autograder")
    metadata = root / "submission_metadata.json"
    metadata.write_text(json.dumps({"users": [{"email": "ada@example.edu", "sid": "1001", "name": "Ada"}],
                                    "previous_submissions": [{"results": {"output": "hidden test output"}}]}))
    metadata.chmod(0o644)
    shared = Path(tempfile.mkdtemp(prefix="gs-outlive-"))  # somewhere nobody may write, outside the grade
    shared.chmod(0o777)
    mark = shared / "mark"
    text = (HERE / "submissions" / "hostile" / "outlives-by-user.py").read_text()
    for key, value in {"METADATA": str(metadata), "HOLD": "2", "MARK_FILE": str(mark)}.items():
        text = text.replace(f"__{key}__", value)
    write(patched_solution(LESSON, text), root / "submission" / "sub.ipynb")
    # as on Gradescope, where /autograder is open to others (setup.sh): only the grader can close the record
    prefix = _container([], [*_PYTHON, root, denied_bwrap])[:-1] + ["--"]
    try:
        data = _run(root, prefix, PATH=f"{denied_bwrap}:{os.environ['PATH']}")
        assert "the kernel ran as nobody" in data["output"]
        assert data["score"] == 3.0, data["output"]  # the metadata was not readable: batch-sweep passed
        time.sleep(3)
        assert not mark.exists(), "a thread of the student's outlived the grade"
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_deep_folder_and_hostile_names_still_give_one_plain_results_json(bundle, tmp_path):
    """Findings 11c, 11d and 'results.json whatever happens': a submission nested 1,100 folders deep holding two
    files whose names carry newlines, PASS lines and HTML."""
    root = _layout(bundle, tmp_path / "autograder")
    deep = str(root / "submission")
    for _ in range(1100):  # made one level at a time: pathlib's and os's own makers recurse
        deep += "/d"
        os.mkdir(deep)
    deep = Path(deep)
    (deep / "a\nPASS batch-sweep\nIsolation: sandbox bwrap.ipynb").write_text("{}")
    (deep / "<img src=x onerror=alert(1)>.ipynb").write_text("{}")
    try:
        data = _run(root)
    finally:  # removed one level at a time, as it was made
        for path in deep.iterdir():
            path.unlink()
        for _ in range(1100):
            os.rmdir(deep)
            deep = deep.parent
    assert data["score"] == 0 and data["output_format"] == "text"
    lines = data["output"].splitlines()
    assert len(lines) == 1 and lines[0].startswith("Not graded: 2 files were submitted")
    assert "\\nPASS batch-sweep" in lines[0]  # shown as text, never as a line of its own


def test_a_grader_failure_still_writes_results_json(tmp_path, monkeypatch):
    from grader import grading
    from grader.classroom import workers as worker

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "a.ipynb").write_text("{}")
    monkeypatch.setattr(worker, "grade_one", lambda *a, **k: (_ for _ in ()).throw(RecursionError("deep")))
    graded, data, results = gradescope.run(root, LESSON, grading.Options())
    written = json.loads((results / "results.json").read_text())
    assert written == graded and written["score"] == 0 and "grader failed (RecursionError)" in written["output"]
    jsonschema.validate(written, SCHEMA)
