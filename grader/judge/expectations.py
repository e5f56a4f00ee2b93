"""Expectations: what a correct answer to one case is, worked out here, outside the kernel.

A case states its figure (`expect` in lesson.toml), names a consistency check
(`property`), wants a ValueError (`raises`), accepts any answer, is recomputed
from the student's own functions (`recompute`), or is asked of the reference
on the same inputs. A case asked on the student's own values (`{"kernel":
name}` arguments) is `Pending` until the kernel says what those values were;
`resolved` then asks the reference on exactly them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from grader.lesson.cases import Accepts, Asked, AskReference, Case, Holds, Raises, Recompute, Stated
from grader.run.decoded import Answer, as_answered, decode


@dataclass(frozen=True)
class Value:
    """The answer must equal this (decoded) value under the case's tolerance."""

    value: Any


@dataclass(frozen=True)
class Pending:
    """Asked on the student's own values: known once the kernel has said what they were."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class Refused:
    """The reference refused the student's own values with something other than a ValueError."""

    why: str


@dataclass(frozen=True)
class Unavailable:
    """No reference to ask (a self-check of a case without a stated figure): a lesson bug if ever judged."""


Expectation = Value | Raises | Holds | Accepts | Recompute | Pending | Refused | Unavailable
"""A stated figure or the reference's answer becomes a decoded `Value`; the other checks are the case's own."""


def expectation(case: Case, reference: dict[str, Any] | None) -> Expectation:
    """What a correct answer is: the case's one check, with a stated figure decoded and the reference asked."""
    match case.check:
        case Recompute():
            return case.check  # answered in the kernel by the student's own functions
        case _ if case.kernel_names():
            return Pending(case.kernel_names())  # asked again once the kernel says what those values were
        case Raises() | Holds() | Accepts():
            return case.check
        case Stated(value):
            return Value(decode(value))
        case AskReference() if reference is None:
            return Unavailable()
        case AskReference():
            try:
                answer = reference_answer(case, reference)
            except Exception as exc:  # a reference that raises is a lesson bug: say so loudly
                raise RuntimeError(f"reference failed on {case.label()}: {type(exc).__name__}: {exc}") from exc
            return Value(as_answered(answer))
    raise AssertionError(f"a check of no known kind: {case.check!r}")


def asked(case: Case) -> Asked:
    """What a lesson's consistency check is given about a case: its arguments decoded (arrays as NumPy arrays)."""
    return Asked(case.name, case.mode, tuple(decode(list(case.args))), dict(decode(dict(case.kwargs))), case.hidden)


def reference_answer(case: Case, reference: dict[str, Any]) -> Any:
    """The reference's answer to a case: its value, or its call on the case's arguments."""
    target = reference[case.reference or case.name]
    if case.mode == "value" and not case.reference:
        return target
    return target(*decode(list(case.args)), **decode(case.kwargs))


def resolved(case: Case, answer: Answer, expect: Expectation,
             reference: dict[str, Any] | None) -> tuple[Case, Expectation]:
    """A case asked on the student's own values, now with those values as its arguments, and its expectation.

    The reference is asked on exactly what the student's code was given. Where
    the reference refuses those values, the student's data is at fault: a
    ValueError means the contract wants one too; anything else fails the case.
    """
    if not isinstance(expect, Pending):
        return case, expect
    if answer.args is None:  # a missing name or a raise is judged as such; an answer without its inputs fails
        return case, Refused("the answer came back without the values it was asked on") if answer.has_value \
            else Accepts()
    case = dataclasses.replace(case, args=answer.args, shown=case.label())
    try:
        return case, expectation(case, reference)
    except RuntimeError as exc:  # the reference refused the student's values
        cause = exc.__cause__
        if isinstance(cause, ValueError):
            return case, Raises("ValueError")
        return case, Refused(f"{type(cause).__name__}: {str(cause)[:120]}")
