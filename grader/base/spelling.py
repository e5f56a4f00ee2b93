"""How a score and a value read for people: one spelling each, used by every text a person reads.

A score is at most two decimals with no trailing zeros: a score by cases of
27/28 of a point reads `0.96` in the report, the terminal, `changes.csv`,
`verify` and the student's message alike. The signed JSON and the gradebook
keep the number itself; only its spelling for people is decided here.

A value (a student's answer, a figure) reads to four significant digits;
integers, booleans, None and non-finite floats read as Python writes them.
"""

from __future__ import annotations

import math
from typing import Any

SCORE_DECIMALS = 2
VALUE_DIGITS = 4


def score(points: Any) -> str:
    """A score (or a number of points) for people: `0.96`, `2`, `-0.5`; anything not a number as it is."""
    if isinstance(points, bool) or not isinstance(points, (int, float)):
        return str(points)
    if not math.isfinite(points):
        return str(points)
    return f"{round(float(points), SCORE_DECIMALS):g}"


def value(shown: Any, digits: int = VALUE_DIGITS) -> str:
    """A number as a figure for people: floats to `digits` significant digits, everything else as Python writes it."""
    if isinstance(shown, float) and math.isfinite(shown):
        return f"{shown:.{digits}g}"
    return str(shown)
