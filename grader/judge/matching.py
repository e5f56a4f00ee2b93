"""Matching: a kernel's answer, decoded from the wire, set against an expected value within a lesson's tolerance.

Both sides arrive decoded (decoded.py): `compare` says how an answer differs
from what was expected, in words a student can act on (`Mismatch`), or None
when it matches; `show` renders a value short, for those words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.lesson.cases import Case
from grader.run.decoded import Opaque


def show(value: Any, limit: int = 160) -> str:
    """A short rendering of an answer for feedback."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = value.item()
    if isinstance(value, np.ndarray):
        text = np.array2string(value, precision=6, separator=", ", threshold=12)
    elif isinstance(value, Opaque):
        text = f"<{value.type_name}>"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k!r}: {show(v, 40)}" for k, v in value.items()) + "}"
    elif isinstance(value, float):
        text = repr(round(value, 10))
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _numbers(value: Any) -> np.ndarray | None:
    if isinstance(value, (Opaque, str, dict)) or value is None:
        return None
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return None
    return array


def _overflows(value: Any) -> bool:
    try:
        np.asarray(value, dtype=float)
    except OverflowError:
        return True
    except (TypeError, ValueError):
        return False
    return False


@dataclass(frozen=True)
class Mismatch:
    """What differed: where, what the student gave, what was expected."""

    where: str
    got: str
    want: str

    def public(self) -> str:
        """Feedback that may show the expected value (public cases)."""
        return f"expected {self.want}{self.at}, got {self.got}"

    def hidden(self) -> str:
        """Feedback that never shows the reference's answer (hidden cases)."""
        return f"your answer{self.at} ({self.got}) differs from the reference"

    @property
    def at(self) -> str:
        return f" for {self.where}" if self.where else ""


def compare(actual: Any, expected: Any, case: Case, decimals: Any = None, where: str = "") -> Mismatch | None:
    """None when `actual` matches `expected` under the case's rule; else what differs."""
    if decimals is None and where == "":
        decimals = case.decimals
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return Mismatch(where, show(actual, 60), f"a dict with keys {sorted(map(str, expected))}")
        for key, want in expected.items():
            if key not in actual:
                return Mismatch(f"key '{key}'", "no such key", f"the key '{key}'")
            rule = decimals.get(key) if isinstance(decimals, dict) else decimals
            problem = compare(actual[key], want, case, rule, where=f"'{key}'" if not where else f"{where}['{key}']")
            if problem:
                return problem
        return None
    if isinstance(expected, bool) or (isinstance(expected, np.ndarray) and expected.dtype == bool and expected.ndim == 0):
        got = actual.item() if isinstance(actual, np.ndarray) and actual.ndim == 0 and actual.dtype == bool else actual
        if not isinstance(got, bool) or got != bool(expected):
            return Mismatch(where, show(actual, 60), f"{bool(expected)} (a bool)")
        return None
    if isinstance(expected, str) or expected is None:
        if actual != expected or type(actual) is not type(expected):
            return Mismatch(where, show(actual, 60), repr(expected))
        return None
    want = _numbers(expected)
    got = _numbers(actual)
    if want is None:
        return None if actual == expected else Mismatch(where, show(actual), show(expected))
    if got is None:
        return Mismatch(where, show(actual, 60) + (" (too large for a float)" if _overflows(actual) else ""),
                        show(expected) if want.ndim == 0 else "numbers")
    if got.shape != want.shape:
        return Mismatch(where, f"shape {list(got.shape)}: {show(actual, 60)}", f"shape {list(want.shape)}: {show(expected, 60)}")
    if isinstance(decimals, int) and not isinstance(decimals, bool):
        ok = np.abs(got - want) <= 0.5 * 10.0 ** (-decimals) + 1e-9
    else:
        ok = np.isclose(got, want, rtol=case.rtol, atol=case.atol)
    ok = (ok & np.isfinite(got)) | (np.isnan(got) & np.isnan(want))
    if np.all(ok):
        return None
    if got.ndim == 0:
        return Mismatch(where, show(actual), show(expected))
    first = tuple(int(i) for i in np.argwhere(~ok)[0])
    if isinstance(actual, (list, tuple)) and got.ndim >= 2 and not where:
        # several returned values (a tuple of arrays): name the one that differs, then the position in it
        named = case.columns[first[0] + 1] if len(case.columns) == got.shape[0] + 1 else ""
        which = f"the {_ordinal(first[0])} of {got.shape[0]} returned values" + (f" ({named})" if named else "")
        position = ", ".join(map(str, first[1:]))
        return Mismatch(f"{which}, at index [{position}]", f"{show(got[first])} in {show(got[first[0]], 100)}",
                        show(want[first]))
    index = "[" + ", ".join(map(str, first)) + "]"
    return Mismatch(f"{where}{index}" if where else f"position {index}", f"{show(got[first])} in {show(actual, 100)}",
                    show(want[first]))


def _ordinal(index: int) -> str:
    """`first`, `second`, ... for a position counted from 0 (a word, so it never reads as an index)."""
    words = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
    return words[index] if index < len(words) else f"{index + 1}th"
