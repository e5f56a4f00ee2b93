"""Shared fixtures: fast limits, notebook builders and a cache of graded results.

Kernel runs are the expensive part of the suite, so every submission is graded
once per session and the result shared by the tests that look at it.
"""

from __future__ import annotations

import copy
import gc
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader import grading
from grader.base.limits import Limits
from grader.intake import load
from grader.lesson import catalog, handout
from grader.lesson.draw import Given

HERE = Path(__file__).parent
SUBMISSIONS = HERE / "submissions"
# Tight budgets only where a test needs a timeout: the answer cell the timeout tests loop in. Every other
# cell keeps a budget that a cold kernel on a loaded 2-core machine meets (imports, first compiles). The budgets
# are not stretched on a busy machine (load_scaled): a test that times a deadline sees the one it set
# (tests/test_busy_machine.py proves the stretching).
TIGHT_CELL = "answer-batch-collection"
FAST = Limits(cell_timeout=30, probe_timeout=30, notebook_timeout=150, startup_timeout=60,
              cell_timeouts=((TIGHT_CELL, 3),), load_scaled=False)
SEED = 20261202


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true", help="rewrite tests/goldens from the current output")


def patched_solution(lesson_id: str, patch: Path | str) -> Any:
    """The lesson's solution notebook with the answer cells of a patch file swapped in.

    Cells of the patch whose id starts `extra-` are added at the end, as a
    student's own extra cells.
    """
    lesson = catalog.get(lesson_id)
    notebook = handout.solution_notebook(lesson)
    text = patch.read_text(encoding="utf-8") if isinstance(patch, Path) else patch
    patch_cells = [c for c in load.notebook_from_script(text).cells if c.cell_type == "code"]
    replacements = {c["id"]: c.source for c in patch_cells}
    ids = {cell["id"] for cell in notebook.cells}
    unknown = [key for key in replacements if key.startswith("answer-") and key not in ids]
    assert not unknown, f"patch names unknown cells {unknown}"
    for cell in notebook.cells:
        if cell["id"] in replacements:
            cell.source = replacements[cell["id"]]
    notebook.cells.extend(c for c in patch_cells if c["id"].startswith("extra-"))
    return notebook


def submission(lesson_id: str, name: str) -> Path:
    """A test submission's answer cells: tests/submissions/<lesson>/<name>.py, or a mistake the lesson itself declares
    (solutions/<lesson>/mistakes/<name>.py: one file, read by `grader validate` and by these tests alike)."""
    own = SUBMISSIONS / lesson_id / f"{name}.py"
    return own if own.is_file() else HERE.parent / "solutions" / lesson_id / "mistakes" / f"{name}.py"


def write(notebook: Any, path: Path) -> Path:
    """Write a notebook and return its path."""
    nbformat.write(notebook, str(path))
    return path


class Graded:
    """Grades each (file, lesson, options) once per session."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.cache: dict[tuple[str, str, bool, int], dict[str, Any]] = {}

    def file(self, path: Path, lesson_id: str, public_only: bool = False, seed: int = SEED,
             sandbox: str = "auto") -> dict[str, Any]:
        key = (str(path), lesson_id, public_only, seed)
        if key not in self.cache:
            options = grading.Options(limits=FAST, public_only=public_only, sandbox=sandbox)
            self.cache[key] = grading.grade(path, lesson_id, options, None, Given(seed=seed)).to_dict()
        return copy.deepcopy(self.cache[key])

    def patch(self, lesson_id: str, name: str, public_only: bool = False) -> dict[str, Any]:
        """Grade the solution with tests/submissions/<lesson>/<name>.py swapped in (`public_only`: as `check` does)."""
        target = self.folder / lesson_id / f"{name}.ipynb"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write(patched_solution(lesson_id, submission(lesson_id, name)), target)
        return self.file(target, lesson_id, public_only=public_only)

    def solution(self, lesson_id: str) -> dict[str, Any]:
        target = self.folder / lesson_id / "solution.ipynb"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write(handout.solution_notebook(catalog.get(lesson_id)), target)
        return self.file(target, lesson_id)


@pytest.fixture(scope="session", autouse=True)
def _own_compile_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Batches in the tests fill the lessons' compilation caches in a folder of the session's own, never the
    user's (the first capacity batch fills it; later ones read it)."""
    os.environ["GRADER_CACHE"] = str(tmp_path_factory.mktemp("grader-cache"))


SUITES_COURSE: list[Path] = []
"""The suite's own course folder (set once per session by _own_course)."""


@pytest.fixture(scope="session", autouse=True)
def _own_course(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The suite grades as a course of its own (the checkout's course.toml, lessons from the checkout) whose private
    state lives in a folder of the session's, and with a config folder of its own: no test reads or writes the
    checkout's private/ or the user's keys."""
    home = tmp_path_factory.mktemp("course")
    (home / "course.toml").write_bytes((HERE.parent / "course.toml").read_bytes())
    os.environ["GRADER_COURSE"] = str(home)
    SUITES_COURSE[:] = [home]
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    for name in ("GRADER_KEY", "GRADER_SECRET"):
        os.environ.pop(name, None)


@pytest.fixture(autouse=True)
def _no_key_in_the_suites_course() -> Any:
    """A test that makes a course key does so in a course of its own (own_course): a key left in the suite's course
    would sign every later test's results, and whether a test passed would depend on the order they ran in."""
    suites = SUITES_COURSE[0] / "private" / "course.key"
    yield
    assert not suites.exists(), f"this test made a course key in the suite's own course ({suites}): use own_course"


@pytest.fixture(autouse=True)
def _dask_sockets_collected_here(request: pytest.FixtureRequest) -> Iterator[None]:
    """A Dask client turned away by the course cluster's guard leaves its connection for the garbage collector
    (distributed's comm objects hold it in a reference cycle): collected at the end of the Dask test, its
    ResourceWarning is that test's, never a later test's that happens to run the collector (a test failing or not
    by the order the suite ran in)."""
    yield
    if request.node.get_closest_marker("dask") is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


@pytest.fixture(scope="module", autouse=True)
def _nothing_left_open_by_a_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """A socket or file a module's tests left open is said at the end of that module (the collector runs there),
    not by whichever later test the collector happens to run in; Dask's own comms are passed over (see above)."""
    yield
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    left = [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)]
    dask = any(item.get_closest_marker("dask") for item in request.session.items if item.module is request.module)
    if left and not dask:
        pytest.fail(f"{request.module.__name__} left {len(left)} thing(s) open, first: {left[0][:300]}")


@pytest.fixture
def own_course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """A course folder of this test's (a course.toml; lessons from the checkout), made the course in force."""
    def make(name: str = "course", toml: str = "", use: bool = True) -> Path:
        home = tmp_path / name
        home.mkdir()
        (home / "course.toml").write_text(f'name = "{name}"\ntimezone = "UTC"\n' + toml)
        if use:
            monkeypatch.setenv("GRADER_COURSE", str(home))
        return home

    return make


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    """Session-wide cache of graded submissions."""
    return Graded(tmp_path_factory.mktemp("graded"))


@pytest.fixture
def make_notebook(tmp_path: Path) -> Callable[..., Path]:
    """Build a notebook file from cell sources ("md:" prefix for markdown cells)."""
    counter = {"n": 0}

    def build(*sources: str, name: str | None = None, metadata: dict[str, Any] | None = None) -> Path:
        counter["n"] += 1
        cells = [new_markdown_cell(s[3:]) if s.startswith("md:") else new_code_cell(s) for s in sources]
        notebook = new_notebook(cells=cells, metadata=metadata or {})
        return write(notebook, tmp_path / (name or f"nb{counter['n']}.ipynb"))

    return build


def typed(data: dict[str, Any]) -> Any:
    """A result's JSON (or a test's partial one) read back as the typed record every reader takes (record.read_result);
    a partial one is a graded result of student `s` of no lesson."""
    from grader.result.record import read_result

    return read_result({"status": "graded", "lesson": None, "student": "s", **data})


def statuses(result: dict[str, Any]) -> dict[str, str]:
    """Exercise id -> status."""
    return {e["id"]: e["status"] for e in result["exercises"]}


@pytest.fixture
def course_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A course key made by `grader keys init` in the private folder of a course of its own; GRADER_KEY unset."""
    from click.testing import CliRunner

    from grader import cli

    home = tmp_path / "keyed-course"
    home.mkdir()
    (home / "course.toml").write_text('name = "keyed course"\ntimezone = "UTC"\n')
    monkeypatch.setenv("GRADER_COURSE", str(home))
    monkeypatch.delenv("GRADER_KEY", raising=False)
    made = CliRunner().invoke(cli.main, ["keys", "init"])
    assert made.exit_code == 0, made.output
    folder = home / "private"
    return folder / "course.key", folder / "course.pub"


def full_marks(result: dict[str, Any]) -> bool:
    """Every exercise passed for all its points, and the score is theirs: the autograded part in full (a lesson's
    written answers are graded by the instructor later, so they are not part of it)."""
    exercises = result["exercises"]
    return bool(exercises) and all(e["status"] == "passed" and e["score"] == e["max_score"] for e in exercises) \
        and result["score"] == sum(e["max_score"] for e in exercises)


@pytest.fixture
def service(own_course: Any, tmp_path: Path) -> Any:
    """The submission service's HTTP side (test_service.py, test_front_door.py): a course with a cooldown and a small size limit, two students and an instructor, its app served on
    loopback; yields an httpx client to it."""
    import socket
    import threading

    import httpx
    import uvicorn

    from grader.service import app, tokens
    from grader.service.jobs import Queue

    own_course(toml="[lessons.inference-capacity.submissions]\ncooldown_minutes = 10\nmax_bytes = 400000\n"
                    "[lessons.dynamic-batching.submissions]\nmax_graded = 1\n")
    made = {p.who: t for p, t in tokens.issue([("ada", "Ada"), ("ben", "Ben")], "student")}
    made["prof"] = tokens.issue([("prof", "Prof")], "instructor")[0][1]
    served = app.Served(queue=Queue(tmp_path / "q.sqlite"), book=tokens.Book(), out=tmp_path / "served",
                        lessons=("inference-capacity", "inference-scaling", "dynamic-batching"), jobs=2, min_free=0)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app.app(served), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=20) as client:
            client.tokens = made  # type: ignore[attr-defined]
            client.served = served  # type: ignore[attr-defined]
            yield client
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _pg_bin(name: str) -> str | None:
    return shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)


@pytest.fixture
def postgres(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on loopback (as the `postgres` user when run as root) that asks for a password
    over TCP; its URL, which carries none: libpq reads it from the PGPASSFILE this sets, as a course's servers do."""
    pytest.importorskip("psycopg")
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not installed (CI installs them)")
    folder = Path(tempfile.mkdtemp(prefix="grader-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(folder)
            pytest.skip("as root, PostgreSQL runs as the `postgres` user, and there is none here")
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = folder / "data"
    secret = folder / "pw"
    secret.write_text("grader-test-secret\n")
    if as_user:
        shutil.chown(secret, "postgres")
    subprocess.run([*as_user, initdb, "-D", str(data), "--auth-local=trust", "--auth-host=scram-sha-256", "-U",
                    "postgres", f"--pwfile={secret}"], check=True, capture_output=True, timeout=120)
    passfile = Path(tempfile.mkdtemp(prefix="grader-pgpass-")) / "pgpass"
    passfile.write_text(f"127.0.0.1:{port}:*:postgres:grader-test-secret\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l", str(folder / "log"), "-w", "-t", "60", "-o",
                    f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start"], check=True,
                   capture_output=True, timeout=90)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(passfile.parent, ignore_errors=True)


def answering(url: str, proc: Any, seconds: float, said: Callable[[], str]) -> None:
    """Wait until a server started as `proc` answers 200 at `url`; else fail with what `said` tells of it."""
    import contextlib
    import time

    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"the server did not start: {said()}")
