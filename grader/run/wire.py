"""Plain-data encoding shared by the probe (inside the kernel) and the judge.

The source of this module is sent verbatim into the student's kernel by the
probe, so it must stay self-contained: standard library only, with NumPy
imported lazily. Nothing here decides a score.

Encoded forms:
- None, bool, int, float and str pass through (float NaN/inf survive JSON);
- lists and tuples become JSON lists;
- arrays (NumPy, JAX, anything with ``shape`` and ``dtype``) and NumPy scalars
  become ``{"__array__": nested list, "shape": [...], "kind": "b"|"i"|"u"|"f"}``
  (scalars: shape ``[]``);
- dicts become ``{"__dict__": [[key, value], ...]}`` (keys may be any type);
- anything else becomes ``{"__object__": "TypeName"}`` (decoded as an ``Opaque``).
Probe inputs use ``{"__array__": ...}`` for arguments that arrive as NumPy
float arrays; everything else arrives as plain Python data.
"""

from dataclasses import dataclass

MAX_ITEMS = 1_000_000
MAX_TEXT = 100_000
MAX_DEPTH = 12


def encode(value, depth=0):
    """Turn a value into JSON-ready plain data (never raises)."""
    if depth > MAX_DEPTH:
        return {"__object__": "nesting too deep"}
    try:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return value[:MAX_TEXT]
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return _encode_array(value)
        if isinstance(value, (list, tuple)):
            if len(value) > MAX_ITEMS:
                return {"__object__": "sequence too long"}
            return [encode(item, depth + 1) for item in value]
        if isinstance(value, dict):
            return {"__dict__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    except Exception:  # a hostile __len__/__iter__/__getattr__ only spoils this answer
        pass
    return {"__object__": type(value).__name__}


def _encode_array(value):
    import numpy

    array = numpy.asarray(value)
    if array.size > MAX_ITEMS:
        return {"__object__": "array too large"}
    if array.dtype.kind not in "biuf":
        return {"__object__": "array of " + str(array.dtype)}
    return {"__array__": array.tolist(), "shape": list(array.shape), "kind": array.dtype.kind}


@dataclass(frozen=True)
class Opaque:
    """A value the kernel could not encode, or that does not decode: its type's name (or what went wrong)."""

    type_name: str


_KINDS = {"b": "bool", "i": "int64", "u": "uint64", "f": "float64"}


def decode(data):
    """Encoded data as Python values, by one rule on both sides of the kernel: arrays keep their kind (bool, int or
    float; an input array without a kind is float), dict keys their tuples, and what was not encoded, or does
    not decode, is an Opaque."""
    if isinstance(data, list):
        return [decode(item) for item in data]
    if isinstance(data, dict):
        if "__array__" in data:
            import numpy

            try:
                return numpy.asarray(data["__array__"], dtype=_KINDS.get(data.get("kind", "f"), "float64"))
            except (TypeError, ValueError, OverflowError):
                return Opaque("array")
        if "__dict__" in data:
            return _decode_dict(data["__dict__"])
        if "__object__" in data:
            return Opaque(str(data["__object__"]))
        return {key: decode(value) for key, value in data.items()}
    return data


def _decode_dict(pairs):
    out = {}
    for key, value in pairs:
        key = decode(key)
        key = key.item() if getattr(key, "ndim", None) == 0 else _hashable(key)
        try:
            out[key] = decode(value)
        except TypeError:  # an unhashable key (a list inside a tuple): the dict is not plain data
            return Opaque("dict")
    return out


def _hashable(key):
    """A list key (a tuple before the wire) as a tuple again."""
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key
