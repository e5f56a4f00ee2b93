"""limits: the bounds of one grade, frozen, with the defaults the contract and the notes give."""

from __future__ import annotations

import dataclasses

import pytest

from grader.limits import Limits


def test_defaults_are_the_documented_ones():
    limits = Limits()
    assert (limits.cell_timeout, limits.probe_timeout, limits.notebook_timeout) == (30.0, 30.0, 300.0)
    assert limits.memory_bytes == 4 * 2**30 and limits.max_message_bytes == 16 * 2**20
    assert limits.given_cell_timeout >= limits.cell_timeout  # a cold kernel's first imports get more room


def test_limits_are_frozen_and_hashable():
    limits = Limits(cell_timeouts=(("answer-queue", 5.0),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.cell_timeout = 1.0  # type: ignore[misc]
    assert {limits: 1}[Limits(cell_timeouts=(("answer-queue", 5.0),))] == 1  # one device check per distinct limits
