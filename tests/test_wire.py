"""wire.py: the plain-data form answers travel in, from the kernel to the judge; it never raises."""

from __future__ import annotations

import json
import math

import numpy as np

from grader.run import wire


def test_plain_values_pass_through_and_survive_json():
    for value in (None, True, 3, 2.5, "text"):
        assert wire.encode(value) == value
    encoded = wire.encode([1, (2.0, "x")])
    assert encoded == [1, [2.0, "x"]] and json.loads(json.dumps(encoded)) == encoded
    assert math.isnan(wire.encode(float("nan")))


def test_arrays_carry_shape_and_kind_and_dicts_keep_any_key():
    assert wire.encode(np.array([[1, 2], [3, 4]], dtype=np.int32)) == {
        "__array__": [[1, 2], [3, 4]], "shape": [2, 2], "kind": "i"}
    assert wire.encode(np.float32(0.5)) == {"__array__": 0.5, "shape": [], "kind": "f"}
    assert wire.encode({(1, 2): "a"}) == {"__dict__": [[[1, 2], "a"]]}
    assert wire.decode({"__dict__": [[[1, 2], "a"]]}) == {(1, 2): "a"}  # a list key comes back hashable


def test_what_cannot_be_plain_data_is_named_not_raised():
    class Hostile:
        def __len__(self):
            raise RuntimeError("no")

    assert wire.encode(object()) == {"__object__": "object"}
    assert wire.encode(np.array(["a"])) == {"__object__": "array of <U1"}
    assert wire.encode(np.zeros(wire.MAX_ITEMS + 1)) == {"__object__": "array too large"}
    assert wire.encode("x" * (wire.MAX_TEXT + 5)) == "x" * wire.MAX_TEXT
    nested: list = []
    for _ in range(wire.MAX_DEPTH + 3):
        nested = [nested]
    assert "nesting too deep" in json.dumps(wire.encode(nested))
    assert wire.encode(Hostile()) == {"__object__": "Hostile"}


def test_one_rule_decodes_on_both_sides_of_the_kernel():
    """An input array without a kind is float; an answer's array keeps its kind; dict keys come back as tuples;
    what was not encoded is Opaque. The kernel runs this module's own source, so it decodes by the same rule."""
    from grader.run import decoded, probe

    data = [{"__array__": [1, 2], "shape": [2]}, {"__array__": [1, 2], "shape": [2], "kind": "i"},
            {"__array__": [True], "shape": [1], "kind": "b"}, {"__dict__": [[[1, 2], "pair"], [3, "three"]]},
            {"__object__": "Widget"}, {"a": 1}]
    kernel: dict = {}
    exec(compile(probe.WIRE_SOURCE, "<grader wire>", "exec"), kernel)
    for decode in (wire.decode, kernel["decode"]):
        floats, ints, flags, keyed, opaque, plain = decode(data)
        assert floats.dtype == np.float64 and floats.tolist() == [1.0, 2.0]
        assert ints.dtype == np.int64 and ints.tolist() == [1, 2]
        assert flags.dtype == np.bool_ and flags.tolist() == [True]
        assert keyed == {(1, 2): "pair", 3: "three"}
        assert type(opaque).__name__ == "Opaque" and opaque.type_name == "Widget"
        assert plain == {"a": 1}
    assert decoded.decode is wire.decode and decoded.Opaque is wire.Opaque  # the one decoder
    assert isinstance(wire.decode({"__array__": [[1], [2, 3]], "kind": "f"}), wire.Opaque)  # ragged: not an array
    assert wire.decode({"__dict__": [[[{"a": 1}], "x"]]}) == wire.Opaque("dict")  # an unhashable key (a dict)
