"""Receipts: signed results, portfolios that anyone can verify offline, and the key's life."""

from __future__ import annotations

import json
import stat
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import batch, cli, record, sign

LESSON = "inference-capacity"


def run(*args, env=None):
    return CliRunner().invoke(cli.main, list(args), env=env)


@pytest.fixture
def course_key(tmp_path, monkeypatch):
    """A course key made by `grader keys init` in a config folder of its own; GRADER_KEY unset."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("GRADER_KEY", raising=False)
    made = run("keys", "init")
    assert made.exit_code == 0, made.output
    folder = tmp_path / "config" / "inference-grader"
    return folder / "course.key", folder / "course.pub"


def test_keys_init_makes_an_owner_only_key_and_never_overwrites_it(course_key):
    key, pub = course_key
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert "PRIVATE KEY" in key.read_text() and "PUBLIC KEY" in pub.read_text()
    before = key.read_bytes()
    again = run("keys", "init")
    assert again.exit_code == 2 and "already exists" in again.stderr and key.read_bytes() == before


def test_canonical_form_is_sorted_compact_ascii_with_non_finite_numbers_as_strings():
    data = {"b": [1.5, float("nan")], "a": {"z": float("inf"), "y": "é"}, "signature": {"value": "x"}}
    assert sign.canonical(data) == b'{"a":{"y":"\\u00e9","z":"Infinity"},"b":[1.5,"NaN"]}'


def _recorded(graded, out: Path, key) -> dict:
    """One result recorded exactly as a batch records it (reports, then the signed result, then the row)."""
    data = graded.solution(LESSON)
    book = record.Gradebook(out / "gradebook.sqlite")
    try:
        return batch._store(out, book, "ada", Path("ada.ipynb"), data, key)
    finally:
        book.close()


def test_a_signed_result_verifies_and_any_edit_is_named(graded, tmp_path, course_key):
    key, pub = course_key
    out = tmp_path / "out"
    data = _recorded(graded, out, sign.signing_key())
    path = out / "results" / "ada.json"
    assert data["signature"]["key"] == sign.fingerprint(sign.public_key(pub))
    assert set(data["digests"]) >= {"submission", "notebook", "report", "lesson", "reference"}
    assert run("verify", str(path), "--key", str(pub)).stdout.strip() == "ada.json: intact"
    for field, change in (("score", lambda d: d.update(score=0.0)),
                          ("measured", lambda d: d["measured"]["values"].update(service_ms=0.001)),
                          ("exercises", lambda d: d["exercises"][0]["messages"].append("well done"))):
        edited = json.loads(path.read_text())
        change(edited)
        (tmp_path / "edited.json").write_text(json.dumps(edited))
        checked = run("verify", str(tmp_path / "edited.json"), "--key", str(pub))
        assert checked.exit_code == 1 and checked.stdout.strip() == f"edited.json: altered (field {field})"


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
    assert checked.exit_code == 1 and checked.stdout.strip() == "ada.json: unsigned (no course key signed it)"


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
        members[f"{LESSON}/report.html"] = members[f"{LESSON}/report.html"].replace(b"Score 9 / 9", b"Score 10 / 9")

    def index_page(members):
        members["index.html"] = members["index.html"].replace(b"9 / 9", b"10 / 9")

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
