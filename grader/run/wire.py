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
- anything else becomes ``{"__object__": "TypeName"}``.
Probe inputs use ``{"__array__": ...}`` for arguments that arrive as NumPy
float arrays; everything else arrives as plain Python data.
"""

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


def decode(data):
    """Turn encoded probe inputs back into Python values (arrays as float arrays)."""
    if isinstance(data, list):
        return [decode(item) for item in data]
    if isinstance(data, dict):
        if "__array__" in data:
            import numpy

            return numpy.asarray(data["__array__"], dtype=float)
        if "__dict__" in data:
            return {_hashable(decode(k)): decode(v) for k, v in data["__dict__"]}
        return {key: decode(item) for key, item in data.items()}
    return data


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key
