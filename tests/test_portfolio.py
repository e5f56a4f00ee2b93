"""portfolio: one student's results, reports and notebooks in one zip, bound by a signed manifest."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from grader.base.errors import GraderError
from grader.classroom import portfolio, verify
from grader.result import record, sign


@pytest.fixture()
def course_key(tmp_path, monkeypatch):
    key = Ed25519PrivateKey.generate()
    private, public = tmp_path / "course.key", tmp_path / "course.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    monkeypatch.setenv("GRADER_KEY", str(private))
    return key, public


def _result_file(folder, key, lesson="inference-capacity", student="ada"):
    folder.mkdir(parents=True, exist_ok=True)
    data = record.GradeResult(status="graded", lesson=lesson, student=student, score=1.0, max_score=1.0,
                              graded_at="2026-12-05T07:00:00+00:00").to_dict()
    report = f"<p>{student}'s report</p>"
    (folder / f"{student}.html").write_text(report)
    (folder / f"{student}.md").write_text("report")
    data = sign.stamp(data, key, notebook=None, report=report, markdown="report")
    path = folder / f"{student}.json"
    path.write_text(record.dumps(data))
    return path


def test_a_portfolio_holds_each_file_once_and_its_manifest_lists_their_digests(tmp_path, course_key):
    key, public = course_key
    out = tmp_path / "ada.zip"
    unsigned = portfolio.build([_result_file(tmp_path / "one", key),
                                _result_file(tmp_path / "two", key, lesson="inference-scaling")], out)
    assert unsigned == []
    with zipfile.ZipFile(out) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    assert sorted(members) == ["index.html", "inference-capacity/report.html", "inference-capacity/report.md",
                               "inference-capacity/result.json", "inference-scaling/report.html",
                               "inference-scaling/report.md", "inference-scaling/result.json", "manifest.json"]
    listing = json.loads(members["manifest.json"])
    assert listing["student"] == "ada" and listing["lessons"] == ["inference-capacity", "inference-scaling"]
    assert listing["files"]["inference-capacity/report.html"] == hashlib.sha256(b"<p>ada's report</p>").hexdigest()
    assert all(line.ok for line in verify.file(out, public)), [line.text() for line in verify.file(out, public)]


def test_two_students_or_two_results_of_one_lesson_are_refused(tmp_path, course_key):
    key, _ = course_key
    with pytest.raises(GraderError, match=r"different students \(ada, ben\)"):
        portfolio.build([_result_file(tmp_path / "a", key), _result_file(tmp_path / "b", key, lesson="x", student="ben")],
                        tmp_path / "out.zip")
    with pytest.raises(GraderError, match="two inputs are for lesson 'inference-capacity'"):
        portfolio.build([_result_file(tmp_path / "c", key), _result_file(tmp_path / "d", key)], tmp_path / "out.zip")
    assert not (tmp_path / "out.zip").exists()


def test_what_is_not_a_result_is_refused_in_one_line(tmp_path, course_key):
    junk = tmp_path / "junk.json"
    junk.write_text('{"schema": 99}')
    with pytest.raises(GraderError, match=r"junk.json: not a grader result \(schema 1\)"):
        portfolio.build([junk], tmp_path / "out.zip")
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(GraderError, match="bad.zip: not a portfolio zip"):
        portfolio.read(tmp_path / "bad.zip")
