"""The probe cells an attempt appends after the student's, and what each of them (or each section) came to.

A tail cell answers one key (the environment, the evidence) or, when its
source is `Sectioned`, one key per exercise. `Tail` keeps which cell answers
which keys and writes their outcomes; the attempt (attempt.py) runs the cells
and tells it how each one ended.
"""

from __future__ import annotations

from typing import Any

import nbformat

from grader.run.cells import ProbeOutcome, left_out
from grader.run.sections import Sectioned, read_journal, stopped_section


class Tail:
    """The tail cells of one attempt and their outcomes by key (`outcomes` is the attempt's own mapping)."""

    def __init__(self, plan_tail: list[tuple[str, str | Sectioned]], skip: dict[str, str], notebook: Any,
                 journal: str, outcomes: dict[str, ProbeOutcome]) -> None:
        self.first = len(notebook.cells)
        """Index of the first tail cell (the student's cells come before it)."""
        self.skip, self.journal, self.outcomes = skip, journal, outcomes
        self.keys: dict[int, str] = {}
        self.sectioned: dict[int, tuple[Sectioned, tuple[str, ...]]] = {}
        for key, source in plan_tail:
            if isinstance(source, Sectioned):
                for section in source.sections:
                    if section in skip:
                        outcomes[section] = left_out(skip[section])
                keep = tuple(section for section in source.sections if section not in skip)
                if not keep:
                    continue
                self.sectioned[len(notebook.cells)] = (source, keep)
                source = source.build(keep, journal)
            cell = nbformat.v4.new_code_cell(source)
            cell["id"] = f"grader-probe-{len(notebook.cells)}"
            self.keys[len(notebook.cells)] = key
            notebook.cells.append(cell)

    def answers(self, index: int) -> tuple[str, ...]:
        """The keys the tail cell at `index` answers."""
        return self.sectioned[index][1] if index in self.sectioned else (self.keys[index],)

    def seconds(self, index: int) -> float | None:
        """A sectioned cell's budget (each section's own, and a second); None for a plain probe cell."""
        if index not in self.sectioned:
            return None
        source, keep = self.sectioned[index]
        return source.seconds_each * len(keep) + 1

    def left_out(self, index: int) -> bool:
        """Whether an earlier attempt left this cell out (its outcome is recorded now, and it does not run)."""
        key = self.keys[index]
        if key in self.skip:
            self.outcomes[key] = left_out(self.skip[key])
            return True
        return False

    def ran(self, index: int, text: str, reply: dict[str, Any], status: str) -> None:
        """A tail cell ran to its end (`status` ok) or past its time (timeout): each key's outcome."""
        error = f"{reply.get('ename')}: {reply.get('evalue')}" if reply.get("status") == "error" else ""
        if index not in self.sectioned:
            self.outcomes[self.keys[index]] = ProbeOutcome(status, text, error, "timed out" if status == "timeout" else "")
            return
        source, keep = self.sectioned[index]
        _, answered = source.progress(text)
        for section in keep:
            late = status if section not in answered else "ok"
            self.outcomes[section] = ProbeOutcome(late, text, error, "timed out" if late == "timeout" else "")

    def stopped(self, index: int, text: str, status: str, why: str, fired: bool) -> str:
        """The kernel died or hung in this tail cell: the key to blame (returned) and every key's outcome.

        In a sectioned cell, answered sections keep their answers, the section that was running takes the blame,
        and the rest did not run (nor did one that finished but whose answer the dying kernel never sent: it runs
        again next attempt). The journal names the running section even when the stdout that announced it was lost.
        """
        if index not in self.sectioned:
            self.outcomes[self.keys[index]] = ProbeOutcome(status, detail=why)
            return self.keys[index]
        source, keep = self.sectioned[index]
        running = stopped_section(source, keep, text, read_journal(self.journal))
        _, answered = source.progress(text)
        for section in keep:
            if section in answered:
                self.outcomes[section] = ProbeOutcome("ok", text)
            elif section == running:
                self.outcomes[section] = ProbeOutcome(status, detail=why)
            else:
                self.outcomes[section] = ProbeOutcome("timeout" if fired else "skipped",
                                                      detail="the notebook ran past its time limit" if fired
                                                      else "the kernel stopped")
        return running

    def garbled(self, index: int, text: str, why: str) -> None:
        """Which probe garbled the protocol cannot be told (the kernel goes on past it): every key not answered
        before the first bad message fails, and nothing is rerun."""
        answered = self.sectioned[index][0].progress(text)[1] if index in self.sectioned else set()
        for section in self.answers(index):
            self.outcomes[section] = (ProbeOutcome("ok", text) if section in answered
                                      else ProbeOutcome("ok", "", f"your code {why}"))

    def not_reached(self, index: int, timed_out: bool, why: str) -> None:
        """The kernel stopped before this tail cell: its keys timed out (the notebook's deadline) or were skipped."""
        for key in self.answers(index):
            self.outcomes.setdefault(key, ProbeOutcome("timeout" if timed_out else "skipped", detail=why))
