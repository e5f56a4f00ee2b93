"""Receipts: signed results, portfolios that anyone can verify offline, and the key's life."""

from __future__ import annotations

import json
import stat
import warnings
import zipfile
from pathlib import Path

from click.testing import CliRunner

from grader import cli
from grader.classroom.batch_folder import BatchFolder
from grader.report import finish
from grader.result import gradebook, record, sign

LESSON = "inference-capacity"


def run(*args, env=None):
    return CliRunner().invoke(cli.main, list(args), env=env)


def test_keys_init_makes_an_owner_only_key_and_never_overwrites_it(course_key):
    key, pub = course_key
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert "PRIVATE KEY" in key.read_text() and "PUBLIC KEY" in pub.read_text()
    before = key.read_bytes()
    again = run("keys", "init")
    assert again.exit_code == 2 and "already exists" in again.stderr and key.read_bytes() == before


def test_canonical_form_is_rfc8785_with_tagged_non_finite_numbers():
    data = {"b": [1.5, float("nan")], "a": {"z": float("inf"), "y": "é"}, "signature": {"value": "x"}}
    # RFC 8785: keys sorted, no spaces, UTF-8 as it is, numbers in ECMAScript's shortest form (1.0 -> 1, 1e21)
    assert sign.canonical(data) == ('{"a":{"y":"é","z":{"$nonfinite":"Infinity"}},"b":[1.5,{"$nonfinite":"NaN"}]}'
                                    .encode())
    assert sign.canonical({"n": [1.0, 1e21, 1e-7, -0.0]}) == b'{"n":[1,1e+21,1e-7,0]}'


def test_the_canonical_form_tells_apart_what_the_old_one_signed_alike():
    assert sign.canonical({"x": float("nan")}) != sign.canonical({"x": "NaN"})
    assert sign.canonical({"x": float("nan")}) != sign.canonical({"x": {"$nonfinite": "NaN"}})  # a key can't pose as a tag
    assert sign.canonical({"x": 2**60}) != sign.canonical({"x": float(2**60)})
    assert sign.canonical({"x": 2**60}) == b'{"x":{"$int":"1152921504606846976"}}'
    assert sign.legacy_canonical({"x": float("nan")}) == sign.legacy_canonical({"x": "NaN"})  # the old weakness


def _recorded(graded, out: Path, key) -> dict:
    """One result recorded exactly as a batch records it (reports, then the signed result, then the row)."""
    data = graded.solution(LESSON)
    book = gradebook.Gradebook(out / "gradebook.sqlite")
    try:
        return BatchFolder(out).store(book, "ada", Path("ada.ipynb"), finish.Graded(record.read_result(data)), key).signed
    finally:
        book.close()


def test_a_signed_result_verifies_and_any_edit_is_named(graded, tmp_path, course_key):
    key, pub = course_key
    out = tmp_path / "out"
    data = _recorded(graded, out, sign.signing_key())
    path = out / "results" / "ada.json"
    assert data["signature"]["key"] == sign.fingerprint(sign.public_key(pub))
    assert set(data["digests"]) >= {"submission", "notebook", "report", "lesson", "reference"}
    shown = run("verify", str(path), "--key", str(pub)).stdout.strip()
    # the graded notebook is the solution's, recorded here as ada's: verify says whose result it really is
    assert shown.startswith("ada.json: intact - student solution, lesson inference-capacity, score 9/12, graded 20")
    assert shown.endswith("the file's name is not the student's")
    for field, change in (("score", lambda d: d.update(score=0.0)),
                          ("measured", lambda d: d["measured"]["values"].update(service_ms=0.001)),
                          ("exercises", lambda d: d["exercises"][0]["messages"].append("well done"))):
        edited = json.loads(path.read_text())
        change(edited)
        (tmp_path / "edited.json").write_text(json.dumps(edited))
        checked = run("verify", str(tmp_path / "edited.json"), "--key", str(pub))
        assert checked.exit_code == 1 and checked.stdout.startswith(f"edited.json: altered (field {field}) - ")


def test_a_result_signed_with_another_key_is_refused(graded, tmp_path, course_key):
    key, pub = course_key
    _recorded(graded, tmp_path / "out", sign.signing_key())
    other = tmp_path / "other"
    sign.init(other)
    checked = run("verify", str(tmp_path / "out" / "results" / "ada.json"), "--key", str(other / "course.pub"))
    assert checked.exit_code == 1 and "ada.json: other key" in checked.stdout


def test_without_a_key_results_say_unsigned(graded, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    monkeypatch.delenv("GRADER_KEY", raising=False)
    data = _recorded(graded, tmp_path / "out", sign.signing_key())
    assert data["signature"] is None
    sign.init(tmp_path / "k")
    checked = run("verify", str(tmp_path / "out" / "results" / "ada.json"), "--key", str(tmp_path / "k" / "course.pub"))
    assert checked.exit_code == 1 and checked.stdout.startswith("ada.json: unsigned (no course key signed it) - ")


def _rezip(source: Path, target: Path, change) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        members = {name: old.read(name) for name in old.namelist()}
        change(members)
        for name, body in members.items():
            new.writestr(name, body)
    return target


def test_a_portfolio_verifies_and_every_kind_of_edit_is_named(graded, tmp_path, course_key):
    key, pub = course_key
    out = tmp_path / "out"
    _recorded(graded, out, sign.signing_key())
    zipped = tmp_path / "ada.zip"
    built = run("portfolio", str(out / "results" / "ada.json"), "--out", str(zipped))
    assert built.exit_code == 0, built.output
    lines = run("verify", str(zipped), "--key", str(pub))
    assert lines.exit_code == 0, lines.stdout
    assert f"{LESSON}/result.json: intact" in lines.stdout and f"{LESSON}/report.html: intact" in lines.stdout
    assert "index.html: generated" in lines.stdout
    index = zipfile.ZipFile(zipped).read("index.html").decode()
    assert sign.fingerprint(sign.public_key(pub)) in index and "grader verify" in index

    def score(members):
        data = json.loads(members[f"{LESSON}/result.json"])
        data["score"] = 0.5
        members[f"{LESSON}/result.json"] = json.dumps(data).encode()

    def timing(members):
        data = json.loads(members[f"{LESSON}/result.json"])
        data["measured"]["values"]["measurements"][0]["p50_ms"] = 0.001
        members[f"{LESSON}/result.json"] = json.dumps(data).encode()

    def report(members):
        members[f"{LESSON}/report.html"] = members[f"{LESSON}/report.html"].replace(b"Score 9 / 12", b"Score 10 / 12")

    def index_page(members):
        members["index.html"] = members["index.html"].replace(b"9 / 12", b"10 / 12")

    def extra(members):
        members[f"{LESSON}/certificate.pdf"] = b"%PDF"

    for change, expected in ((score, f"{LESSON}/result.json: altered (field score)"),
                             (timing, f"{LESSON}/result.json: altered (field measured)"),
                             (report, f"{LESSON}/report.html: altered"),
                             (index_page, "index.html: altered"),
                             (extra, f"{LESSON}/certificate.pdf: altered")):
        checked = run("verify", str(_rezip(zipped, tmp_path / "edited.zip", change)), "--key", str(pub))
        assert checked.exit_code == 1 and expected in checked.stdout, (expected, checked.stdout)


def test_the_private_key_is_never_written_into_an_output_folder(graded, tmp_path, course_key):
    key, _ = course_key
    out = tmp_path / "out"
    _recorded(graded, out, sign.signing_key())
    run("portfolio", str(out / "results" / "ada.json"), "--out", str(out / "ada.zip"))
    secret = key.read_text().split("-----")[2].strip()
    for path in out.rglob("*"):
        if path.is_file():
            body = path.read_bytes()
            if path.suffix == ".zip":
                body = b"".join(zipfile.ZipFile(path).read(n) for n in zipfile.ZipFile(path).namelist())
            assert b"PRIVATE KEY" not in body and secret.encode() not in body, path


# ---- what verify must not be fooled by ----

def _signed_result(graded, tmp_path, student="ada") -> Path:

    data = dict(graded.solution(LESSON), student=student)
    notebook = json.dumps({"cells": [], "note": f"{student}'s executed notebook"})
    book = gradebook.Gradebook(tmp_path / student / "gradebook.sqlite")
    try:
        BatchFolder(tmp_path / student).store(book, student, Path(f"{student}.ipynb"),
                     finish.Graded(record.read_result(data), notebook=notebook), sign.signing_key())
    finally:
        book.close()
    return tmp_path / student / "results" / f"{student}.json"


def test_a_key_given_twice_is_an_alteration_not_a_choice(graded, tmp_path, course_key):
    _, pub = course_key
    path = _signed_result(graded, tmp_path)
    text = path.read_text()
    assert text.startswith("{")
    forged = tmp_path / "forged.json"
    forged.write_text('{"score": 10.0, ' + text[1:])  # Python's json keeps the last score, other readers the first
    checked = run("verify", str(forged), "--key", str(pub))
    assert checked.exit_code == 1 and "forged.json: altered (the key 'score' appears twice" in checked.stdout


def test_a_result_saved_under_another_name_says_whose_it_is(graded, tmp_path, course_key):
    _, pub = course_key
    path = _signed_result(graded, tmp_path)
    renamed = tmp_path / "cleo.json"
    renamed.write_bytes(path.read_bytes())
    checked = run("verify", str(renamed), "--key", str(pub))
    assert checked.stdout.startswith("cleo.json: intact - student ada, lesson inference-capacity, score 9/12")
    assert "the file's name is not the student's" in checked.stdout


def test_a_result_signed_before_rfc8785_verifies_only_as_legacy(graded, tmp_path, course_key):
    import base64

    _, pub = course_key
    data = json.loads(_signed_result(graded, tmp_path).read_text())
    data["signature"].pop("canonical")
    data["field_digests"] = {k: sign.digest(sign.legacy_canonical(v)) for k, v in sorted(data.items())
                             if k not in ("signature", "field_digests")}
    data["signature"]["value"] = base64.b64encode(sign.signing_key().sign(sign.legacy_canonical(data))).decode()
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    checked = run("verify", str(old), "--key", str(pub))
    assert checked.exit_code == 1 and checked.stdout.startswith("old.json: legacy (signed before")


def _portfolio_of(graded, tmp_path, pub) -> Path:
    zipped = tmp_path / "ada.zip"
    built = run("portfolio", str(_signed_result(graded, tmp_path)), "--out", str(zipped))
    assert built.exit_code == 0, built.output
    assert run("verify", str(zipped), "--key", str(pub)).exit_code == 0
    return zipped


def test_a_portfolio_with_two_entries_of_one_name_is_not_intact(graded, tmp_path, course_key):
    _, pub = course_key
    zipped = _portfolio_of(graded, tmp_path, pub)
    forged = tmp_path / "twice.zip"
    with zipfile.ZipFile(zipped) as old, zipfile.ZipFile(forged, "w") as new, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it is asked to write
        new.writestr(f"{LESSON}/report.html", b"<p>Score 10 / 9</p>")  # what `unzip` would show first
        for name in old.namelist():
            new.writestr(name, old.read(name))
    checked = run("verify", str(forged), "--key", str(pub))
    assert checked.exit_code == 1
    assert f"{LESSON}/report.html: altered (the zip holds two entries of this name" in checked.stdout


def test_a_portfolio_binds_its_files_to_one_student(graded, tmp_path, course_key):
    from grader.classroom import portfolio

    _, pub = course_key
    zipped = _portfolio_of(graded, tmp_path, pub)
    cleo = json.loads(_signed_result(graded, tmp_path, "cleo").read_text())
    assert sign.check(cleo, sign.public_key(pub))[0] == "intact"  # a genuine result, of another student

    def rebuilt(members: dict) -> dict:
        """The portfolio as a forger would leave it: index and manifest rebuilt to match (no key needed)."""
        entries = [portfolio.Entry(n.split("/")[0], json.loads(b), b.decode(), "", "", None)
                   for n, b in members.items() if n.endswith("/result.json")]
        members["index.html"] = portfolio.index_html(entries).encode()
        student = json.loads(members[f"{LESSON}/result.json"])["student"]
        listing = portfolio.manifest(student, [e.folder for e in entries], members)
        members["manifest.json"] = record.dumps(sign.unsigned(listing)).encode()
        return members

    def add_cleo(members):
        members["other-lesson/result.json"] = record.dumps(cleo).encode()
        members["other-lesson/report.html"] = b""
        members["other-lesson/report.md"] = b""
        rebuilt(members)

    def drop_notebook(members):
        del members[f"{LESSON}/notebook.ipynb"]
        rebuilt(members)

    for change, expected in ((add_cleo, "other-lesson/result.json: altered (the result of student 'cleo', in the "
                                        "portfolio of 'ada')"),
                             (drop_notebook, f"{LESSON}/notebook.ipynb: altered (missing from the portfolio")):
        checked = run("verify", str(_rezip(zipped, tmp_path / "edited.zip", change)), "--key", str(pub))
        assert checked.exit_code == 1 and expected in checked.stdout, (expected, checked.stdout)
