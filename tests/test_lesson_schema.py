"""A lesson.toml is checked when it loads: a typo is refused in one line naming the file and the key."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader.base.errors import LessonError
from grader.lesson import catalog, lesson_schema

ROOT = Path(__file__).resolve().parent.parent


def _spec(lesson_id: str) -> dict:
    return tomllib.loads((ROOT / "lessons" / lesson_id / "lesson.toml").read_text())


@pytest.mark.parametrize("lesson_id", catalog.available())
def test_every_shipped_lesson_fits_the_schema(lesson_id):
    assert lesson_schema.problem(_spec(lesson_id)) is None


def _broken(change) -> str | None:
    spec = copy.deepcopy(_spec("inference-scaling"))
    change(spec)
    return lesson_schema.problem(spec)


def test_a_misspelt_exercise_key_is_named_with_its_exercise():
    def typo(spec):
        spec["exercises"][1]["pointz"] = spec["exercises"][1].pop("points")
    message = _broken(typo)
    assert message.startswith("exercises[1] (crossover).pointz: unknown key")
    assert "points" in message and "\n" not in message


def test_a_misspelt_case_key_names_the_case():
    def typo(spec):
        spec["exercises"][0]["cases"][2]["expcet"] = spec["exercises"][0]["cases"][2].pop("expect")
    assert _broken(typo).startswith("exercises[0] (batch-sweep).cases[2].expcet: unknown key")


def test_top_level_and_figure_typos_are_refused():
    assert _broken(lambda s: s.update(titel="x")).startswith("titel: unknown key")
    assert _broken(lambda s: s["figure"].update(captoin="x")).startswith("figure.captoin: unknown key")


def test_wrong_types_and_values_are_refused():
    assert "points" in _broken(lambda s: s["exercises"][0].update(points="one"))
    assert "'often'" in _broken(lambda s: s["exercises"][0].update(scoring="often"))
    assert "'timed'" in _broken(lambda s: s["exercises"][0].update(kind="timed"))


def test_a_case_must_name_call_or_value_but_not_both():
    def both(spec):
        spec["exercises"][0]["cases"][0]["value"] = "x"
    said = "exercises[0] (batch-sweep).cases[0]: a case names exactly one of `call`, `value` and `evaluate` (with its `reference`)"
    assert _broken(both) == said

    def evaluate_alone(spec):  # an expression needs the reference function that answers it
        case = spec["exercises"][0]["cases"][0]
        del case["call"]
        case["evaluate"] = "sweep(args[0])"
    assert _broken(evaluate_alone) == said


def test_a_case_declares_one_check_and_two_are_refused_not_ranked():
    def two(spec):  # a stated figure and "must raise": which would win was a hidden priority; now neither
        spec["exercises"][0]["cases"][0]["raises"] = "ValueError"
    assert _broken(two) == ("exercises[0] (batch-sweep).cases[0]: a case declares one check, not `expect` and "
                            "`raises` (one of expect, expect_none, raises, property, accepts, recompute)")

    def three(spec):
        spec["exercises"][0]["cases"][0].update(property="shape", accepts=True)
    assert "not `expect` and `property` and `accepts`" in _broken(three)
    assert _broken(lambda s: s["exercises"][0]["cases"][0].update(rtol=0.1)) is None  # a tolerance is no check


def test_a_hidden_generators_case_is_held_to_one_check_too():
    from grader.lesson.cases import Holds, Raises

    with pytest.raises(LessonError, match="declares one check, not raises and property"):
        catalog.case_from_spec({"call": "f", "raises": "ValueError", "property": "shape"}, hidden=True)
    assert catalog.case_from_spec({"call": "f", "raises": "ValueError", "accepts": False}).check == Raises("ValueError")
    assert catalog.case_from_spec({"call": "f", "property": "shape", "expect_none": False}).check == Holds("shape")


def test_timings_need_their_field_names():
    spec = copy.deepcopy(_spec("inference-capacity"))
    del spec["figure"]["timing_fields"]
    assert "timing_fields" in lesson_schema.problem(spec)


def test_loading_a_broken_course_says_file_and_key(tmp_path, monkeypatch):
    course = tmp_path / "course"
    shutil.copytree(ROOT / "lessons" / "inference-scaling", course / "lessons" / "inference-scaling")
    toml = course / "lessons" / "inference-scaling" / "lesson.toml"
    toml.write_text(toml.read_text().replace("points = 1", "pointz = 1", 1))
    monkeypatch.setenv("GRADER_COURSE", str(course))
    catalog.forget()
    try:
        with pytest.raises(LessonError) as caught:
            catalog.get("inference-scaling")
    finally:
        catalog.forget()
    assert str(caught.value).startswith(f"{toml}: exercises[0] (batch-sweep).pointz: unknown key")
    result = subprocess.run([sys.executable, "-m", "grader", "validate", "inference-scaling"], capture_output=True,
                            text=True, env={"GRADER_COURSE": str(course), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "pointz: unknown key" in result.stderr
