"""decoded: the probe's wire answers become typed records once; values decode as the wire encoded them."""

from __future__ import annotations

import pickle

import numpy as np

from grader.run import decoded, wire
from grader.run.decoded import NOTHING, Answer, Opaque, Own, Raised


def test_values_decode_to_what_the_kernel_had():
    assert decoded.decode(wire.encode((1, 2.5, "x", None, True))) == [1, 2.5, "x", None, True]
    ints = decoded.decode(wire.encode(np.array([[1, 2], [3, 4]], dtype=np.int32)))
    assert ints.dtype.kind == "i" and ints.tolist() == [[1, 2], [3, 4]]
    flags = decoded.decode(wire.encode(np.array([True, False])))
    assert flags.dtype == bool and flags.tolist() == [True, False]
    assert decoded.decode(wire.encode({(1, 2): "pair", 3.0: [1]})) == {(1, 2): "pair", 3.0: [1]}  # a tuple key again
    assert decoded.decode(wire.encode(object())) == Opaque("object")


def test_what_cannot_be_decoded_is_opaque_not_an_error():
    assert decoded.decode({"__array__": [[1], [1, 2]], "shape": [2], "kind": "f"}) == Opaque("array")  # ragged
    assert decoded.decode({"__array__": [10**30], "shape": [1], "kind": "i"}) == Opaque("array")    # no int64
    assert decoded.decode({"__dict__": [[{"__dict__": []}, 1]]}) == Opaque("dict")                  # a dict key


def test_each_kind_of_answer_is_one_record():
    value = Answer.from_wire({"value": {"__array__": [1.0, 2.0], "shape": [2], "kind": "f"}, "args": [[3.0], 4]})
    assert value.has_value and value.value.tolist() == [1.0, 2.0] and value.args == ([3.0], 4)
    assert value.wire == {"__array__": [1.0, 2.0], "shape": [2], "kind": "f"}  # what a result records
    raised = Answer.from_wire({"raised": {"type": "KeyError", "value_error": False, "message": "'k'"}})
    assert not raised.has_value and raised.raised == Raised("KeyError", False, "'k'") and raised.missing is None
    missing = Answer.from_wire({"missing": "simulate"})
    assert missing.missing == "simulate" and not missing.has_value and missing.args is None


def test_none_is_a_value_and_nothing_is_not():
    assert Answer.from_wire({"value": None}).has_value
    assert not decoded.NO_ANSWER.has_value and decoded.NO_ANSWER.value is NOTHING
    assert pickle.loads(pickle.dumps(NOTHING)) is NOTHING  # a worker's record keeps meaning "no value"


def test_a_recomputation_is_kept_beside_the_answer():
    own = Answer.from_wire({"value": 5.0, "own": {"value": 6.5}}).own
    assert own == Own(6.5)
    failed = Answer.from_wire({"missing": "predicted", "own": {"raised": {"type": "ValueError", "value_error": True}}})
    assert failed.own.raised == Raised("ValueError", True) and failed.own.value is NOTHING


def test_the_reference_is_put_through_the_same_wire_as_the_student():
    answered = decoded.as_answered((np.float32(0.5), np.arange(3), {"k": (1, 2)}))
    assert answered[0] == 0.5 and answered[1].tolist() == [0, 1, 2] and answered[2] == {"k": [1, 2]}
