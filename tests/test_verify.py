"""verify: one line per file, saying whose result it is and whether the course key vouches for it."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from grader.classroom import verify
from grader.judge.verdict import ExerciseResult
from grader.result import record, sign


def _keys(tmp_path):
    key = Ed25519PrivateKey.generate()
    pub = tmp_path / "course.pub"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, pub


def _result(student="ada", score=1.5):
    return record.GradeResult(status="graded", lesson="inference-capacity", student=student, score=score,
                              max_score=2.0, exercises=(ExerciseResult("queue", "passed", 1.5, 2.0, "simulated"),),
                              graded_at="2026-12-05T07:00:00+00:00").to_dict()


def _written(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(record.dumps(data))
    return path


def test_an_intact_result_says_whose_it_is(tmp_path):
    key, pub = _keys(tmp_path)
    (line,) = verify.file(_written(tmp_path, "ada.json", sign.sign(_result(), key)), pub)
    assert line.ok and line.text() == ("ada.json: intact - student ada, lesson inference-capacity, score 1.5/2, "
                                       "graded 2026-12-05T07:00:00+00:00")


def test_an_edit_names_the_field_and_a_rename_is_pointed_out(tmp_path):
    key, pub = _keys(tmp_path)
    signed = sign.sign(_result(), key)
    (edited,) = verify.file(_written(tmp_path, "ada.json", dict(signed, score=2.0)), pub)
    assert not edited.ok and edited.verdict == "altered" and "score" in edited.detail
    (renamed,) = verify.file(_written(tmp_path, "ben.json", signed), pub)
    assert renamed.ok and renamed.about.endswith("the file's name is not the student's")


def test_a_key_given_twice_and_a_stranger_key_are_not_intact(tmp_path):
    key, pub = _keys(tmp_path)
    text = record.dumps(sign.sign(_result(), key))
    twice = tmp_path / "ada.json"
    twice.write_text('{"score": 2.0, ' + text.lstrip()[1:])
    (line,) = verify.file(twice, pub)
    assert line.verdict == "altered" and "which one counts depends on the reader" in line.detail
    other = Ed25519PrivateKey.generate()
    (stranger,) = verify.file(_written(tmp_path, "ada.json", sign.sign(_result(), other)), pub)
    assert stranger.verdict == "other key"
    (unsigned,) = verify.file(_written(tmp_path, "ada.json", sign.unsigned(_result())), pub)
    assert unsigned.verdict == "unsigned" and not unsigned.ok


def test_whose_reads_what_the_result_states_even_when_it_is_odd():
    assert verify.whose({"status": "rejected", "student": "eli", "lesson": "l"}).startswith("student eli, lesson l, rejected")
    assert verify.whose([1, 2]) == "" and "score True/2" in verify.whose(dict(_result(), score=True))
    assert json.loads(json.dumps(verify.whose(_result())))  # plain text, one line
