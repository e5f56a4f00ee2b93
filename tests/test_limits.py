"""limits: the bounds of one grade, frozen, with the defaults the contract and the notes give."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import cli
from grader.base.limits import Limits


def test_defaults_are_the_ones_the_help_and_readme_state():
    """The defaults read from what users are told (`grader grade --help`, the README), not from limits.py."""
    helped = " ".join(CliRunner().invoke(cli.main, ["grade", "--help"], terminal_width=200).output.split())
    cell = re.search(r"per cell and per exercise probe \(default (\d+)\)", helped)
    whole = re.search(r"whole run \(default (\d+)\)", helped)
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    memory = re.search(r"`RLIMIT_AS`, (\d+) GiB", readme)
    message = re.search(r"ZMQ message over (\d+) MiB", readme)
    limits = Limits()
    assert cell and whole and memory and message
    assert (limits.cell_timeout, limits.probe_timeout) == (float(cell[1]), float(cell[1]))
    assert limits.notebook_timeout == float(whole[1])
    assert limits.memory_bytes == int(memory[1]) * 2**30 and limits.max_message_bytes == int(message[1]) * 2**20
    assert limits.given_cell_timeout >= limits.cell_timeout  # a cold kernel's first imports get more room


def test_limits_are_frozen_and_hashable():
    limits = Limits(cell_timeouts=(("answer-queue", 5.0),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.cell_timeout = 1.0  # type: ignore[misc]
    assert {limits: 1}[Limits(cell_timeouts=(("answer-queue", 5.0),))] == 1  # one device check per distinct limits
