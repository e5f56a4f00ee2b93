"""The red team's findings, each as a test that failed before its fix: an output over a device or a
stream, a worker's certificate used as the course's client, the review token in a cookie, a decoy variant cell, CA
files under a permissive umask, the spreadsheet round trip, and a lesson id with a newline. (The naive due date is
tests/test_course.py's.)"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from grader import cli
from grader.base import escape, files
from grader.lesson import catalog, handout
from grader.result import variants

ROOT = Path(__file__).resolve().parent.parent


def _grade_to(target: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """`grader grade` of a file that is not a notebook (rejected: no kernel), its --json to `target`."""
    bad = tmp_path / "ada.ipynb"
    bad.write_text("not a notebook")
    return subprocess.run([sys.executable, "-m", "grader", "grade", str(bad), "--lesson", "inference-scaling",
                           "--json", str(target)], capture_output=True, text=True, timeout=120)


# 1. (high, as root) an output over a device node is written through, never replaced by a file

@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_an_output_over_a_character_device_is_written_through_never_replaced(tmp_path):
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a private /dev/null
    done = _grade_to(null, tmp_path)
    assert done.returncode == 2 and "not valid notebook JSON" in done.stderr, done.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode)  # still the device, not a regular file in its place
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_an_output_over_a_descriptor_link_goes_to_the_stream_and_the_link_stays(tmp_path):
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")  # what /dev/stdout is
    done = _grade_to(link, tmp_path)
    assert done.returncode == 2
    assert done.stdout.lstrip().startswith("{") and '"status": "rejected"' in done.stdout  # the JSON, on stdout
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


def test_an_output_over_a_fifo_feeds_its_reader_and_a_folder_is_refused_in_one_line(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = _grade_to(fifo, tmp_path)
    reader.join(timeout=60)
    assert done.returncode == 2 and got and b'"status": "rejected"' in got[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(files.NotWritable, match="is a folder: nothing was written there"):
        files.write_text(tmp_path, "x")
    lonely = tmp_path / "nobody-reads"
    os.mkfifo(lonely)
    with pytest.raises(files.NotWritable, match="a FIFO that nobody reads"):
        files.write_text(lonely, "x")


# 2. (medium) a worker's certificate is not the course's client

def test_each_role_has_its_own_certificate_use(tmp_path):
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from grader.classroom import certs

    certs.make(tmp_path / "tls")
    uses = {}
    for role in certs.ROLES:
        cert = x509.load_pem_x509_certificate((tmp_path / "tls" / f"{role}.pem").read_bytes())
        uses[role] = set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
        assert cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value == f"inference-grader {role}"
    assert uses["client"] == {ExtendedKeyUsageOID.CLIENT_AUTH}
    assert uses["worker"] == uses["scheduler"] == {ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH}


def test_the_guard_lets_a_worker_join_and_nothing_more():
    from grader.classroom import cluster_guard as guard

    assert guard.allowed("Scheduler", "client", "register-client")
    assert guard.allowed("Scheduler", "worker", "register-worker") and guard.allowed("Worker", "worker", "get_data")
    for op in ("register-client", "run_function", "broadcast", "proxy", "register_worker_plugin", "scatter",
               "gather", "feed"):
        assert not guard.allowed("Scheduler", "worker", op), op
    assert not guard.allowed("Worker", "worker", "run") and not guard.allowed("Nanny", "worker", "run")
    assert not guard.allowed("Scheduler", "", "identity")  # no course certificate: nothing


@pytest.mark.dask
@pytest.mark.filterwarnings("ignore")
def test_a_worker_certificate_cannot_submit_work_on_a_guarded_cluster(tmp_path, caplog):
    distributed = pytest.importorskip("distributed")
    from distributed.core import rpc

    from grader.classroom import certs, cluster_guard

    tls = tmp_path / "tls"
    certs.make(tls)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1", protocol="tls://", security=certs.security(tls, "scheduler"),
                                  **cluster_guard.LOCAL_CLUSTER) as cluster:
        with distributed.Client(cluster.scheduler_address, security=certs.security(tls, "client"), timeout=30) as ok:
            assert ok.submit(sum, [1, 2]).result(timeout=60) == 3  # the course's client may
            worker_address = next(iter(ok.scheduler_info()["workers"]))
        with pytest.raises(Exception), distributed.Client(  # noqa: B017 - the client only sees its connection refused
                cluster.scheduler_address, security=certs.security(tls, "worker"), timeout=15) as bad:
            bad.submit(sum, [1, 2]).result(timeout=15)
        assert "refused 'register-client'" in caplog.text and "(role worker)" in caplog.text
        worker_tls = certs.security(tls, "worker").get_connection_args("client")

        async def as_worker(address: str, op: str) -> None:
            async with rpc(address, connection_args=worker_tls) as remote:
                await getattr(remote, op)(function=b"", args=b"", kwargs=b"")

        import asyncio

        for address, op in ((cluster.scheduler_address, "run_function"), (worker_address, "run")):
            with pytest.raises(Exception, match="refused by the course cluster's guard"):
                asyncio.run(as_worker(address, op))


@pytest.mark.dask
@pytest.mark.filterwarnings("ignore")
def test_a_batch_refuses_a_cluster_started_without_the_guard(tmp_path):
    distributed = pytest.importorskip("distributed")
    from grader import grading
    from grader.base.errors import GraderError
    from grader.classroom import certs, workers as cluster

    tls = tmp_path / "tls"
    certs.make(tls)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1", protocol="tls://", security=certs.security(tls, "scheduler")
                                  ) as unguarded, pytest.raises(GraderError, match="run without the course's guard"):
        list(cluster.on_cluster(unguarded.scheduler_address, [], "inference-scaling", grading.Options(), {}, 0, tls=tls))


# 4. (low) the review token is never a cookie: another local server could read it

def test_the_review_page_sets_no_cookie_and_a_cookie_opens_nothing(tmp_path):
    import asyncio

    from grader.classroom import review_app

    class _Review:  # the page's handlers only read these before they refuse or answer
        graded: dict[str, str] = {}
        out = tmp_path

    served = review_app._Served(_Review(), "the-token")

    def request(query: str = "", cookie: str = "") -> object:
        from starlette.requests import Request

        headers = [(b"cookie", cookie.encode())] if cookie else []
        return Request({"type": "http", "method": "GET", "path": "/", "query_string": query.encode(),
                        "headers": headers})

    assert not served.allowed(request(cookie="grader_review=the-token"))  # a cookie alone is nothing
    assert served.allowed(request("token=the-token"))
    refused = asyncio.run(served.page(request(cookie="grader_review=the-token")))
    assert refused.status_code == 403 and b"set-cookie" not in b" ".join(k for k, _ in refused.raw_headers)


# 5. (low) a decoy variant cell placed first does not take the owner's numbers

def test_a_decoy_cell_before_the_given_variant_cell_is_not_taken_for_it():
    lesson = catalog.get("dynamic-batching")
    book = handout.scaffold(lesson, {"P99_SLO_MS": 8.0})  # another handout's numbers in the given cell
    given = next(i for i, c in enumerate(book.cells) if c.get("id") == lesson.variant_cell)
    book.cells.insert(0, nbformat.v4.new_code_cell("P99_SLO_MS = 12.0  # a decoy"))
    index, held = handout.found_numbers(lesson, book)
    assert index == given + 1 and held == {"P99_SLO_MS": 8.0}
    ran, _ = variants.applied(lesson, book, {"P99_SLO_MS": 15.0})
    assert "P99_SLO_MS = 15.0" in ran.cells[given + 1].source and ran.cells[0].source.startswith("P99_SLO_MS = 12.0")
    note = variants.held_elsewhere(book, "1004", {"P99_SLO_MS": 15.0}, held)
    assert note and "holds the numbers of another handout" in note[0]


# 6. (low) CA files under a permissive umask

def test_the_ca_and_its_folder_are_not_writable_by_others_under_umask_000(tmp_path):
    from grader.classroom import certs

    before = os.umask(0)
    try:
        certs.make(tmp_path / "a" / "tls")
    finally:
        os.umask(before)
    mode = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [tmp_path / "a", tmp_path / "a" / "tls",
                                                               *(tmp_path / "a" / "tls").iterdir()]}
    assert mode["a"] == mode["tls"] == 0o755 and mode["ca.pem"] == 0o644 and mode["worker.pem"] == 0o644
    assert mode["worker-key.pem"] == 0o600 and mode["ca-private"] == 0o700


# 7. (low) the spreadsheet round trip gives back what was exported

def test_an_export_read_back_keeps_ids_and_comments_that_look_like_formulas(tmp_path):
    from grader.classroom import review as review_csv

    filled = [{"student": "-ben", "name": "=Ben", "question": "explanation", "answer": "-1 is the answer", "points": "1",
               "max_points": "2", "rubric": "", "comment": "-0.5: no units", "grader": "=ta"},
              {"student": "ada", "question": "explanation", "points": "", "max_points": "2", "rubric": "overhead;jitter",
               "comment": "+ fine | good"}]
    rows = [list(review_csv.CSV_COLUMNS), *([row.get(c, "") for c in review_csv.CSV_COLUMNS] for row in filled)]
    path = tmp_path / "marks.csv"
    path.write_text(escape.csv_text(rows))
    assert "'-ben" in path.read_text()  # neutralised for the spreadsheet
    back = [row for _, row in review_csv._rows(path)]
    assert [back[0][c] for c in ("student", "name", "answer", "comment", "grader")] == [
        "-ben", "=Ben", "-1 is the answer", "-0.5: no units", "=ta"]
    assert back[1]["comment"] == "+ fine | good" and back[1]["rubric"] == "overhead;jitter"


# 8. (low) an id with a final newline is refused before anything is written

def test_grader_new_refuses_an_id_ending_in_a_newline_and_writes_nothing(tmp_path, monkeypatch):
    import shutil

    home = tmp_path / "c"
    shutil.copytree(ROOT / "templates", home / "templates")
    (home / "lessons").mkdir()
    (home / "solutions").mkdir()
    monkeypatch.setenv("GRADER_COURSE", str(home))
    for args in (["new", "kv\n"], ["new", "kv", "--exercise", "ok", "--exercise", "bad\n"]):
        done = CliRunner().invoke(cli.main, args)
        assert done.exit_code == 2 and "is not an id" in done.output
        assert list((home / "lessons").iterdir()) == [] and list((home / "solutions").iterdir()) == []
