"""Step 2b, run: execute a notebook afresh, then the probe cells, in one kernel.

Errors in a cell do not stop the run (`allow_errors`); a cell past its timeout
is interrupted (message-mode interrupt) and later cells still run; a kernel
that ignores the interrupt, or dies, is replaced and the notebook is run once
more without the cell or probe that caused it. A whole-notebook watchdog kills
the kernel at the deadline. Output kept is capped per cell and per notebook,
and ZMQ messages larger than a bound end the run as an output flood.
"""

from __future__ import annotations

import asyncio
import copy
import math
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import nbformat
import zmq
import zmq.asyncio
from jupyter_client.asynchronous.client import AsyncKernelClient
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from traitlets import Type

from grader import kernel_messages
from grader.limits import Limits
from grader.sandbox import _SandboxKernelManager

TRACEBACK_CHARS = 4000
ERROR_CHARS = 2000
TRUNCATED = "\n[grader: output truncated]\n"


@dataclass(frozen=True)
class CellRun:
    """How one student cell ran in the final attempt."""

    index: int
    """Position in the notebook."""
    cell_id: str
    """The cell's id."""
    status: str
    """`ok`, `error`, `timeout`, `dropped` (killed the kernel), `not-run` or `empty`."""
    ename: str = ""
    """Exception class name, for `error`."""
    evalue: str = ""
    """Exception message, for `error`."""
    traceback: str = ""
    """Plain-text traceback, truncated."""
    seconds: float = 0.0
    """Wall time of the cell."""


@dataclass(frozen=True)
class Executed:
    """The outcome of running one submission."""

    cells: tuple[CellRun, ...]
    """Student cells, in notebook order."""
    tail: dict[str, dict[str, Any]]
    """Per probe key: {"status": ok|timeout|died|skipped, "stdout": text, "detail": why}."""
    notebook: Any
    """The freshly executed notebook (probe cells removed), outputs capped."""
    attempts: int
    """Kernels started (1 unless a kernel died or hung)."""
    dropped: tuple[str, ...]
    """What was left out of later attempts and why."""
    seconds: float
    """Wall time of the whole run."""
    flood: bool = False
    """A message over the size bound arrived: the kernel was stopped."""
    deadline_hit: bool = False
    """The whole-notebook watchdog fired."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent starting kernels, in cells and in probes."""


SECTION_BEGIN, SECTION_ANSWER = "begin:", "answer:"
"""After the marker: `begin:<key>` opens a section, `answer:<key>:<payload>` closes it."""

JOURNAL = "probe-journal"
"""A file in the kernel's run dir where a sectioned cell also notes `begin:<key>` and `answer:<key>` with a plain
write(2). Its stdout is sent later by the kernel's IOPub thread, and a kernel that dies (os._exit, a crash) loses
what was not yet sent; a write is on file when it returns, so the journal still names the section that was running."""
JOURNAL_BYTES = 64 * 1024
"""The journal's tail that is read; only the student's own code could make it longer."""


@dataclass(frozen=True)
class Sectioned:
    """One tail cell that runs several sections in turn (one round trip for all of them).

    The cell prints `<marker>begin:<key>` before each section and
    `<marker>answer:<key>:<payload>` after it, notes both in a journal file
    (see JOURNAL), and bounds each section's time itself. If the kernel dies
    or hangs in a section, that section is left out of the next attempt, as a
    cell of its own would be.
    """

    sections: tuple[str, ...]
    """Section keys, in the order the cell runs them."""
    build: Callable[[tuple[str, ...], str], str]
    """The cell's source for these sections, given the journal's path (empty: no journal)."""
    marker: str
    """The per-run nonce that starts every marker line."""
    seconds_each: float
    """Each section's time limit (the cell's own limit is their sum)."""

    def progress(self, text: str) -> tuple[list[str], set[str]]:
        """(sections begun, in order; sections answered) in the cell's output so far."""
        begun, answered = [], set()
        begin, answer = self.marker + SECTION_BEGIN, self.marker + SECTION_ANSWER
        for line in text.splitlines():
            if line.startswith(begin):
                begun.append(line[len(begin):])
            elif line.startswith(answer):
                answered.add(line[len(answer):].split(":", 1)[0])
        return begun, answered


class _Stuck(Exception):
    """The kernel did not answer an interrupt after a timeout."""


class _BoundedKernelClient(AsyncKernelClient):
    """Refuses oversized ZMQ messages, so a flood cannot grow the grader's memory, and malformed ones
    (kernel_messages), so a garbled protocol is the student's error, never the grader's."""

    max_message_bytes = 16 * 1024 * 1024
    shell_channel_class = Type(kernel_messages.CheckedChannel)
    iopub_channel_class = Type(kernel_messages.CheckedChannel)
    stdin_channel_class = Type(kernel_messages.CheckedChannel)
    control_channel_class = Type(kernel_messages.CheckedChannel)

    async def wait_for_ready(self, timeout: float | None = None) -> None:  # type: ignore[override]
        """Ready once the kernel answers kernel_info and IOPub delivers, as jupyter_client's own check, but
        without its closing 0.2 s drain of IOPub: nbclient reads IOPub by parent message id, so the status
        messages of this handshake never reach a cell. That drain was 0.2 s of every kernel start."""
        from queue import Empty

        from jupyter_client.session import protocol_version

        deadline = time.monotonic() + (timeout if timeout is not None else math.inf)
        while True:
            # Any kernel_info reply will do, as in jupyter_client: a slow kernel answers an earlier request
            # after the next one is sent, and waiting for the latest one's answer would never catch up.
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            if reply and reply["msg_type"] == "kernel_info_reply":
                try:
                    await self.iopub_channel.get_msg(timeout=0.2)  # IOPub is connected: something came through
                except Empty:
                    pass
                else:
                    major = int(str(reply["content"].get("protocol_version", protocol_version)).split(".")[0])
                    if major != int(protocol_version.split(".")[0]):
                        self.session.adapt_version = major
                    return
            if not await self.is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")

    def _context_default(self) -> zmq.Context:  # type: ignore[override]
        self._created_context = True  # so that stop_channels() destroys it
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        context.setsockopt(zmq.RCVHWM, 200)
        return context


class _Client(NotebookClient):
    """nbclient with output caps, reply capture and stuck-kernel detection."""

    def __init__(self, nb: Any, *, limits: Limits, student_cells: int, **kwargs: Any) -> None:
        super().__init__(nb, **kwargs)
        self.limits = limits
        self.student_cells = student_cells
        self.replies: dict[int, dict[str, Any]] = {}
        self.timed_out: set[int] = set()
        self.cell_chars: dict[int, int] = {}
        self.total_chars = 0
        self.truncated: set[int] = set()
        self.caps: dict[int, int] = {}

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int) -> Any:
        if msg["msg_type"] == "error":  # kept always, but as short as any other output
            msg = dict(msg, content=_short_error(msg.get("content", {})))
        content = msg.get("content", {})
        size = len(str(content.get("text", ""))) + sum(len(str(v)) for v in (content.get("data") or {}).values())
        size += sum(len(line) for line in content.get("traceback", []) or [])
        probe = cell_index >= self.student_cells
        cell_cap = self.caps.get(cell_index, self.limits.probe_payload_bytes + 4096) if probe else self.limits.cell_output_chars
        used = self.cell_chars.get(cell_index, 0) + size
        over_total = not probe and self.total_chars + size > self.limits.notebook_output_chars
        if msg["msg_type"] != "error" and (used > cell_cap or over_total):
            if cell_index not in self.truncated:
                self.truncated.add(cell_index)
                outs.append(nbformat.v4.new_output("stream", name="stderr", text=TRUNCATED))
            return None
        self.cell_chars[cell_index] = used
        if not probe:
            self.total_chars += size
        return super().output(outs, msg, display_id, cell_index)

    async def _check_raise_for_error(self, cell: Any, cell_index: int, exec_reply: dict[str, Any] | None) -> None:
        if exec_reply is not None:
            self.replies[cell_index] = exec_reply.get("content", {})
        await super()._check_raise_for_error(cell, cell_index, exec_reply)

    async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> None | dict[str, Any]:
        index = self._current_index
        if index in self.timed_out:
            raise _Stuck()
        self.timed_out.add(index)
        return await super()._async_handle_timeout(timeout, cell)

    _current_index = -1


async def _watch_protocol(channel: kernel_messages.CheckedChannel, km: Any, state: dict[str, Any]) -> None:
    """A kernel that sent a malformed message is stopped; nbclient then meets a dead kernel on its own path."""
    await channel.broken.wait()
    state["garbled"] = state["garbled"] or channel.malformed
    await km.shutdown_kernel(now=True)


async def _watch_flood(channel: Any, km: Any, state: dict[str, Any]) -> None:
    """libzmq drops a connection for good when a message exceeds MAXMSGSIZE: stop the kernel then."""
    from zmq.utils.monitor import parse_monitor_message

    socket = channel.socket
    monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
    try:
        while True:
            event = parse_monitor_message(await monitor.recv_multipart())
            if event["event"] == zmq.EVENT_DISCONNECTED:
                await asyncio.sleep(0.2)
                if await km.is_alive():
                    state["flood"] = True
                    await km.shutdown_kernel(now=True)
                return
    finally:
        try:
            socket.disable_monitor()
        except zmq.ZMQError:
            pass
        monitor.close(linger=0)


def cell_name(notebook: Any, index: int) -> str:
    """A cell as the student sees it: the cell that starts with its first line of code."""
    try:
        lines = [line.strip() for line in notebook.cells[index].source.splitlines()]
    except (AttributeError, IndexError, TypeError):
        return f"cell {index + 1}"
    first = next((line for line in lines if line and not line.startswith("#")), "")
    if not first:
        return f"cell {index + 1}"
    return f'the cell starting "{first[:60]}{"..." if len(first) > 60 else ""}"'


_KERNEL_FILE = re.compile(r"(?:/tmp/ipykernel_\d+/)?\b\d{5,}\.py\b")


def readable(text: str) -> str:
    """ipykernel's internal file names (`/tmp/ipykernel_7/2912668609.py`) as what the student sees: the cell."""
    return _KERNEL_FILE.sub("this cell", text)


def _short_error(content: dict[str, Any]) -> dict[str, Any]:
    """An error output cut to the size of a traceback the report shows (a student's message can be megabytes)."""
    lines = [str(line)[:TRACEBACK_CHARS] for line in (content.get("traceback") or [])[-40:]]
    return dict(content, ename=str(content.get("ename", ""))[:200], evalue=str(content.get("evalue", ""))[:ERROR_CHARS],
                traceback=lines)


def whole_seconds(seconds: float) -> int:
    """nbclient takes whole seconds, and reads 0 as no limit: round a limit up, never down to 0."""
    return max(1, math.ceil(seconds))


def _plain_traceback(lines: list[str]) -> str:
    import re

    text = "\n".join(re.sub(r"\x1b\[[0-9;]*m", "", str(line)[:TRACEBACK_CHARS]) for line in lines[-40:])
    return text if len(text) <= TRACEBACK_CHARS else text[: TRACEBACK_CHARS // 2] + "\n...\n" + text[-TRACEBACK_CHARS // 2:]


def _stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
                   and o.get("name") == "stdout")


def read_journal(path: str) -> str:
    """The tail of a sectioned cell's journal; empty if it is missing or not a regular file (the kernel could
    have put a FIFO or a link in its place)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        return os.pread(fd, JOURNAL_BYTES, max(0, info.st_size - JOURNAL_BYTES)).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def _left_out(status: str) -> dict[str, str]:
    """The outcome of a tail cell or section left out of this attempt because it hung or killed the last kernel."""
    return {"status": status, "detail": "left out after it " + ("hung" if status == "timeout" else "killed the kernel")}


def _sections_stopped(result: "_Attempt", entry: tuple[Sectioned, tuple[str, ...]], text: str, status: str,
                      why: str, fired: bool, journal: str = "") -> str:
    """A sectioned cell ended with its kernel dead or stuck: answered sections keep their answers, the section
    that was running takes the blame (returned), and the rest did not run (nor did one that finished but whose
    answer the dying kernel never sent: it runs again next attempt).

    The journal's text names the running section even when the stdout that announced it was lost."""
    source, keep = entry
    running = stopped_section(source, keep, text, journal)
    _, answered = source.progress(text)
    for section in keep:
        if section in answered:
            result.tail[section] = {"status": "ok", "stdout": text, "error": "", "detail": ""}
        elif section == running:
            result.tail[section] = {"status": status, "detail": why}
        else:
            result.tail[section] = {"status": "timeout" if fired else "skipped",
                                    "detail": "the notebook ran past its time limit" if fired else "the kernel stopped"}
    return running


def stopped_section(source: Sectioned, keep: tuple[str, ...], text: str, journal: str) -> str:
    """The section a sectioned cell was in when its kernel stopped: the last one begun and not finished, by its
    journal, else by its stdout, else the first not finished."""
    noted_begun, noted_done = source.progress(journal)
    begun, answered = source.progress(text)
    done = noted_done | answered
    for started in (noted_begun, begun):
        running = next((s for s in reversed(started) if s not in done and s in keep), None)
        if running:
            return running
    return next((s for s in keep if s not in done), keep[0])


@dataclass
class _Attempt:
    cells: dict[int, CellRun] = field(default_factory=dict)
    tail: dict[str, dict[str, Any]] = field(default_factory=dict)
    killer: tuple[str, Any] | None = None
    flood: bool = False
    deadline_hit: bool = False
    notebook: Any = None
    startup: float = 0.0
    cell_seconds: float = 0.0
    probe_seconds: float = 0.0


def execute(
    notebook: Any,
    tail: list[tuple[str, str | Sectioned]],
    limits: Limits,
    make_kernel: Callable[[], _SandboxKernelManager],
    given: frozenset[int] = frozenset(),
    warm: frozenset[int] = frozenset(),
) -> Executed:
    """Run the notebook's cells, then each (key, source) tail cell, in a fresh kernel.

    A tail cell's source may be `Sectioned`: its outcomes are then reported per section key.

    `given` holds the indices of cells that are the lesson's own given code,
    unchanged: they get `limits.given_cell_timeout`. `warm` holds the leading
    given cells whose run the kernel starts with (a zygote ran them once,
    without output): they are counted as run, and not sent.
    """
    budgets = cell_budgets(notebook, limits, given)
    return asyncio.run(_execute(notebook, tail, limits, make_kernel, budgets, warm))


def cell_budgets(notebook: Any, limits: Limits, given: frozenset[int]) -> dict[int, float]:
    """Seconds each cell may run: its own override, else a given cell's budget, else `cell_timeout`."""
    overrides = dict(limits.cell_timeouts)
    budgets = {}
    for index, cell in enumerate(notebook.cells):
        if cell.get("id") in overrides:
            budgets[index] = overrides[cell["id"]]
        elif index in given:
            budgets[index] = max(limits.cell_timeout, limits.given_cell_timeout)
        else:
            budgets[index] = limits.cell_timeout
    return budgets


async def _execute(notebook: Any, tail: list[tuple[str, str | Sectioned]], limits: Limits,
                   make_kernel: Callable[[], _SandboxKernelManager], budgets: dict[int, float],
                   warm: frozenset[int] = frozenset()) -> Executed:
    began = time.monotonic()
    deadline = began + limits.notebook_timeout
    skip_cells: dict[int, str] = {}
    skip_tail: dict[str, str] = {}
    dropped: list[str] = []
    attempt = _Attempt()
    attempts = 0
    timings = {"startup": 0.0, "cells": 0.0, "probes": 0.0}
    flooded = False
    while attempts < limits.attempts:
        attempts += 1
        attempt = await _one_attempt(notebook, tail, limits, make_kernel, skip_cells, skip_tail, deadline, budgets, warm)
        timings["startup"] += attempt.startup
        timings["cells"] += attempt.cell_seconds
        timings["probes"] += attempt.probe_seconds
        flooded = flooded or attempt.flood
        if attempt.killer is None or attempt.deadline_hit:
            break
        where, key = attempt.killer
        if where == "cell":
            status = attempt.cells[key].status
            skip_cells[key] = status if status == "timeout" else (attempt.cells[key].evalue or "killed the kernel")
            dropped.append(f"{cell_name(notebook, key)} "
                           + ("ignored the interrupt after its timeout" if status == "timeout"
                              else attempt.cells[key].evalue or "killed the kernel"))
        else:
            skip_tail[key] = attempt.tail[key]["status"]
            dropped.append(f"the probe of exercise '{key}' "
                           + ("ignored the interrupt after its timeout" if skip_tail[key] == "timeout" else "killed the kernel"))
    cells = tuple(attempt.cells[i] for i in range(len(notebook.cells)))
    return Executed(cells=cells, tail=attempt.tail, notebook=attempt.notebook, attempts=attempts,
                    dropped=tuple(dropped), seconds=time.monotonic() - began, flood=flooded,
                    deadline_hit=attempt.deadline_hit, timings=timings)


async def _one_attempt(notebook: Any, tail: list[tuple[str, str | Sectioned]], limits: Limits,
                       make_kernel: Callable[[], _SandboxKernelManager],
                       skip_cells: dict[int, str], skip_tail: dict[str, str], deadline: float,
                       budgets: dict[int, float], warm: frozenset[int] = frozenset()) -> _Attempt:
    result = _Attempt()
    nb = copy.deepcopy(notebook)
    n_student = len(nb.cells)
    km = make_kernel()
    journal = str(km.rundir / JOURNAL)
    tail_index: dict[int, str] = {}
    sectioned: dict[int, tuple[Sectioned, tuple[str, ...]]] = {}
    for key, source in tail:
        if isinstance(source, Sectioned):
            for section in source.sections:
                if section in skip_tail:
                    result.tail[section] = _left_out(skip_tail[section])
            keep = tuple(section for section in source.sections if section not in skip_tail)
            if not keep:
                continue
            sectioned[len(nb.cells)] = (source, keep)
            source = source.build(keep, journal)
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = f"grader-probe-{len(nb.cells)}"
        tail_index[len(nb.cells)] = key
        nb.cells.append(cell)
    km.client_class = "grader.run._BoundedKernelClient"
    _BoundedKernelClient.max_message_bytes = limits.max_message_bytes
    client = _Client(nb, km=km, limits=limits, student_cells=n_student, allow_errors=True,
                     interrupt_on_timeout=True, timeout=whole_seconds(limits.cell_timeout),
                     startup_timeout=whole_seconds(limits.startup_timeout), iopub_timeout=4,
                     shutdown_kernel="immediate", record_timing=False, kernel_name="python3")
    for index, (_, keep) in sectioned.items():
        client.caps[index] = (limits.probe_payload_bytes + 4096) * len(keep)
    watchdog: asyncio.Task[None] | None = None
    monitors: list[asyncio.Task[None]] = []
    state: dict[str, Any] = {"fired": False, "flood": False, "garbled": ""}

    async def _watch() -> None:
        await asyncio.sleep(max(0.0, deadline - time.monotonic()))
        state["fired"] = True
        await km.shutdown_kernel(now=True)

    def _finish_rest(start: int, status: str, why: str) -> None:
        for j in range(start, len(nb.cells)):
            keys = sectioned[j][1] if j in sectioned else (tail_index.get(j),)
            if j < n_student:
                result.cells.setdefault(j, CellRun(j, nb.cells[j]["id"], status))
            else:
                for key in keys:
                    result.tail.setdefault(key, {"status": "timeout" if status == "timeout" else "skipped",
                                                 "detail": why})

    try:
        started = time.monotonic()
        async with client.async_setup_kernel(cleanup_kc=True, **km.start_kwargs()):
            result.startup = time.monotonic() - started
            watchdog = asyncio.ensure_future(_watch())
            assert client.kc is not None
            monitors = [asyncio.ensure_future(watch(channel, km, state))
                        for channel in (client.kc.iopub_channel, client.kc.shell_channel)
                        for watch in (_watch_flood, _watch_protocol)]
            executed = 0
            for index, cell in enumerate(nb.cells):
                is_tail = index >= n_student
                key = tail_index.get(index)
                if not is_tail and (cell.cell_type != "code" or not cell.source.strip()):
                    result.cells[index] = CellRun(index, cell["id"], "empty")
                    continue
                if not is_tail and index in skip_cells:
                    hung = skip_cells[index] == "timeout"
                    result.cells[index] = CellRun(index, cell["id"], "timeout" if hung else "dropped",
                                                  evalue="left out: it " + ("ignored the interrupt after its timeout" if hung
                                                                            else skip_cells[index].replace("the kernel died", "killed the kernel")))
                    continue
                if is_tail and key in skip_tail:
                    result.tail[key] = _left_out(skip_tail[key])
                    continue
                if not is_tail and index in warm:  # the kernel starts with its run (see execute)
                    executed += 1
                    cell.outputs, cell.execution_count = [], executed
                    result.cells[index] = CellRun(index, cell["id"], "ok")
                    continue
                if index in sectioned:
                    client.timeout = whole_seconds(sectioned[index][0].seconds_each * len(sectioned[index][1]) + 1)
                else:
                    client.timeout = whole_seconds(limits.probe_timeout if is_tail else budgets.get(index, limits.cell_timeout))
                client._current_index = index
                t0 = time.monotonic()
                try:
                    executed += 1
                    await client.async_execute_cell(cell, index, execution_count=executed)
                except (DeadKernelError, _Stuck, CellTimeoutError) as err:
                    elapsed = time.monotonic() - t0
                    await asyncio.sleep(0.3)  # let the flood monitor report first
                    flood = bool(state["flood"])
                    garbled = state["garbled"]
                    timed = state["fired"] or not isinstance(err, DeadKernelError)
                    status = "timeout" if timed else "died"
                    why = (f"flooded its output (a message over {limits.max_message_bytes // 2**20} MiB); the kernel was stopped"
                           if flood else f"broke the kernel protocol: it sent {garbled}; the kernel was stopped" if garbled
                           else "the kernel died while running this cell")
                    if garbled and is_tail:
                        # Which probe garbled the protocol cannot be told (the kernel goes on past it): every
                        # exercise not answered before the first bad message fails, and nothing is rerun.
                        answered = sectioned[index][0].progress(_stdout(cell))[1] if index in sectioned else set()
                        for section in (sectioned[index][1] if index in sectioned else (key,)):
                            result.tail[section] = ({"status": "ok", "stdout": _stdout(cell), "error": "", "detail": ""}
                                                    if section in answered else
                                                    {"status": "ok", "stdout": "", "error": f"your code {why}"})
                        _finish_rest(index + 1, "not-run", "the kernel stopped")
                        break
                    if index in sectioned:
                        key = _sections_stopped(result, sectioned[index], _stdout(cell), status,
                                                why if not timed else "timed out", state["fired"],
                                                read_journal(journal))
                    elif is_tail:
                        result.tail[key] = {"status": status, "detail": why if not timed else "timed out"}
                    else:
                        result.cells[index] = CellRun(index, cell["id"], "timeout" if timed else "dropped",
                                                      evalue=why if not timed else "", seconds=elapsed)
                    result.deadline_hit = state["fired"]
                    result.flood = flood
                    if not state["fired"]:
                        result.killer = ("tail" if is_tail else "cell", key if is_tail else index)
                    _finish_rest(index + 1, "timeout" if state["fired"] else "not-run",
                                 "the notebook ran past its time limit" if state["fired"] else "the kernel stopped")
                    break
                elapsed = time.monotonic() - t0
                if is_tail:
                    result.probe_seconds += elapsed
                    text = _stdout(cell)
                    reply = client.replies.get(index, {})
                    status = "timeout" if index in client.timed_out else "ok"
                    error = f"{reply.get('ename')}: {reply.get('evalue')}" if reply.get("status") == "error" else ""
                    if index in sectioned:
                        _, answered = sectioned[index][0].progress(text)
                        for section in sectioned[index][1]:
                            late = status if section not in answered else "ok"
                            result.tail[section] = {"status": late, "stdout": text, "error": error,
                                                    "detail": "timed out" if late == "timeout" else ""}
                    else:
                        result.tail[key] = {"status": status, "stdout": text, "error": error,
                                            "detail": "timed out" if status == "timeout" else ""}
                else:
                    result.cell_seconds += elapsed
                    reply = client.replies.get(index, {})
                    if index in client.timed_out:
                        result.cells[index] = CellRun(index, cell["id"], "timeout", seconds=elapsed,
                                                      evalue=f"interrupted after {budgets.get(index, limits.cell_timeout):g} s")
                    elif reply.get("status") == "error":
                        result.cells[index] = CellRun(index, cell["id"], "error", str(reply.get("ename", ""))[:200],
                                                      readable(str(reply.get("evalue", ""))[:500]),
                                                      readable(_plain_traceback(reply.get("traceback", []) or [])),
                                                      elapsed)
                    else:
                        result.cells[index] = CellRun(index, cell["id"], "ok", seconds=elapsed)
            for task in monitors:
                task.cancel()
    finally:
        for task in monitors:
            task.cancel()
        if watchdog is not None:
            watchdog.cancel()
        km.remove_dirs()
    del nb.cells[n_student:]
    result.notebook = nb
    return result
