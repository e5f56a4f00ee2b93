# Attack: replace json.dumps in the kernel so that every probe answer is junk:
# wrong types, forged wire forms, and nesting thousands of levels deep.
# %% id=extra-forged-answers
import json

_real_dumps = json.dumps


def _forged(obj, *args, **kwargs):
    if isinstance(obj, dict) and "results" in obj:
        if len(obj["results"]) % 2:
            return "[" * 5000 + "]" * 5000
        junk = {"value": {"__dict__": [[{"__dict__": 1}]]}, "raised": {"type": {"x": 1}}}
        return _real_dumps({"defined": {"simulate_queue": [1, {"y": 2}]}, "results": [junk] * len(obj["results"])})
    return _real_dumps(obj, *args, **kwargs)


json.dumps = _forged
