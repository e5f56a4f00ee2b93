"""shapes.py: a JSON shape passes good data and names the place and reason of bad data."""

from __future__ import annotations

from grader.base.shapes import Shape

POINT = Shape({"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"],
               "additionalProperties": False})


def test_good_data_has_no_error():
    assert POINT.first_error({"x": 1.5}) is None


def test_bad_data_gets_the_best_matching_error_with_its_place():
    error = POINT.first_error({"x": "one"})
    assert list(error.absolute_path) == ["x"] and error.validator == "type"
    assert POINT.first_error({}).validator == "required"
    assert POINT.first_error({"x": 1, "y": 2}).validator == "additionalProperties"


def test_draft_7_keywords_are_honoured():
    shape = Shape({"dependencies": {"a": ["b"]}}, draft="7")
    assert shape.first_error({"a": 1, "b": 2}) is None
    assert shape.first_error({"a": 1}).validator == "dependencies"


def _fresh(schema):
    return Shape(dict(schema))


def test_a_compiled_shape_is_kept_and_the_kept_one_judges_alike(tmp_path, monkeypatch):
    import fastjsonschema

    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}, "id": {"pattern": "^a[0-9]+$"}},
              "required": ["n"]}
    first = _fresh(schema)
    assert first.first_error({"n": 4, "id": "a12"}) is None
    kept = list((tmp_path / "shapes").iterdir())
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o077 == 0

    def no_generation(*args, **kwargs):
        raise AssertionError("the kept code should have been used")

    monkeypatch.setattr(fastjsonschema, "compile_to_code", no_generation)
    again = _fresh(schema)
    assert again.first_error({"n": 4, "id": "a12"}) is None
    assert again.first_error({"n": 2}).validator == "minimum"
    assert again.first_error({"n": 5, "id": "b1"}).validator == "pattern"
    assert again.first_error({"id": "a1"}).validator == "required"


def test_kept_code_in_a_folder_others_can_write_is_never_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    schema = {"type": "object", "required": ["k"]}
    _fresh(schema).first_error({"k": 1})
    (kept,) = (tmp_path / "shapes").iterdir()
    planted = compile("raise SystemExit('planted code ran')", "<planted>", "exec")
    import marshal

    kept.write_bytes(marshal.dumps(planted))
    (tmp_path / "shapes").chmod(0o777)  # another user could have written it: the grader compiles afresh
    assert _fresh(schema).first_error({"k": 1}) is None
    assert _fresh(schema).first_error({}).validator == "required"


def test_a_damaged_kept_file_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    schema = {"type": "array", "items": {"type": "string"}}
    _fresh(schema).first_error([])
    (kept,) = (tmp_path / "shapes").iterdir()
    kept.write_bytes(b"\x00not marshal data")
    assert _fresh(schema).first_error(["a"]) is None
    assert _fresh(schema).first_error([1]).validator == "type"
    import marshal

    kept.write_bytes(marshal.dumps(7))  # marshal data, but no code
    assert _fresh(schema).first_error(["b"]) is None
