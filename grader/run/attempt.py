"""One attempt at a notebook: one fresh kernel runs the student's cells, then the probe cells.

A cell past its budget is interrupted (nbclient's `interrupt_on_timeout`); a
second interrupt for the same cell means the kernel ignores them (`Stuck`). A
dead or stuck kernel, a flood or a garbled message ends the attempt, naming the
cell or probe to blame (`Attempt.killer`), which execution.py leaves out of the next.
Only nbclient's public hooks are used: `on_cell_start`, `on_cell_executed`,
`timeout_func` and the client's `output`.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nbformat
import zmq
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from grader.base.limits import Limits
from grader.kernel import protocol
from grader.kernel.managers import SandboxKernelManager
from grader.run.cells import TRUNCATED, CellRun, ProbeOutcome, plain_traceback, readable, short_error, stdout, whole_seconds
from grader.run.sections import JOURNAL, Sectioned
from grader.run.tail import Tail


@dataclass
class Attempt:
    """What one kernel did with the notebook."""

    cells: dict[int, CellRun] = field(default_factory=dict)
    tail: dict[str, ProbeOutcome] = field(default_factory=dict)
    killer: tuple[str, Any] | None = None
    """("cell", index) or ("tail", key): what stopped the kernel, to leave out next time."""
    flood: bool = False
    deadline_hit: bool = False
    notebook: Any = None
    startup: float = 0.0
    cell_seconds: float = 0.0
    probe_seconds: float = 0.0


@dataclass(frozen=True)
class Plan:
    """What an attempt runs and what earlier attempts left out."""

    notebook: Any
    tail: list[tuple[str, str | Sectioned]]
    limits: Limits
    make_kernel: Callable[[], SandboxKernelManager]
    skip_cells: dict[int, str]
    skip_tail: dict[str, str]
    deadline: float
    budgets: dict[int, float]
    warm: frozenset[int] = frozenset()


class Stuck(Exception):
    """The kernel did not answer an interrupt after a timeout."""


class OutputCapped(NotebookClient):
    """nbclient keeping at most a capped amount of each cell's output (and of the whole notebook's)."""

    def __init__(self, nb: Any, *, limits: Limits, student_cells: int, **kwargs: Any) -> None:
        super().__init__(nb, **kwargs)
        self.limits = limits
        self.student_cells = student_cells
        self.cell_chars: dict[int, int] = {}
        self.total_chars = 0
        self.truncated: set[int] = set()
        self.caps: dict[int, int] = {}

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int) -> Any:
        if msg["msg_type"] == "error":  # kept always, but as short as any other output
            msg = dict(msg, content=short_error(msg.get("content", {})))
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


async def watch_protocol(channel: protocol.CheckedChannel, km: Any, watched: Watched) -> None:
    """A kernel that sent a malformed message is stopped; nbclient then meets a dead kernel on its own path."""
    await channel.broken.wait()
    watched.garbled = watched.garbled or channel.malformed
    await km.shutdown_kernel(now=True)


async def watch_flood(channel: Any, km: Any, watched: Watched) -> None:
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
                    watched.flood = True
                    await km.shutdown_kernel(now=True)
                return
    finally:
        try:
            socket.disable_monitor()
        except zmq.ZMQError:
            pass
        monitor.close(linger=0)


@dataclass
class Watched:
    """What the watcher tasks saw while an attempt ran: the notebook's deadline fired, a flood, a garbled message."""

    fired: bool = False
    flood: bool = False
    garbled: str = ""


class AttemptRun:
    """One kernel's run of a `Plan`: `await AttemptRun(plan).run()` gives the `Attempt`.

    Its state: the attempt's record (`result`), the notebook with the tail cells appended (`nb`, `tail`), the cell
    running now (`current`, written by nbclient's hooks), the cells interrupted (`timed_out`), the replies, and what
    the watchers saw (`watched`).
    """

    def __init__(self, plan: Plan) -> None:
        self.plan, self.limits = plan, plan.limits
        self.result = Attempt()
        self.nb = copy.deepcopy(plan.notebook)
        self.n_student = len(self.nb.cells)
        self.km = plan.make_kernel()
        self.km.on_interrupt = self._interrupted
        self.tail = Tail(plan.tail, plan.skip_tail, self.nb, str(self.km.rundir / JOURNAL), self.result.tail)
        self.client = self._client()
        self.current = -1
        self.timed_out: set[int] = set()
        self.replies: dict[int, dict[str, Any]] = {}
        self.watched = Watched()

    def _client(self) -> OutputCapped:
        limits = self.limits
        client = OutputCapped(self.nb, km=self.km, limits=limits, student_cells=self.n_student, allow_errors=True,
                              interrupt_on_timeout=True, timeout_func=self._timeout,
                              startup_timeout=whole_seconds(limits.startup_timeout), iopub_timeout=4,
                              shutdown_kernel="immediate", record_timing=False, kernel_name="python3",
                              on_cell_start=self._started, on_cell_executed=self._executed)
        for index, (_, keep) in self.tail.sectioned.items():
            client.caps[index] = (limits.probe_payload_bytes + 4096) * len(keep)
        return client

    # nbclient's hooks, and the kernel manager's interrupt
    def _started(self, cell: Any, cell_index: int) -> None:
        self.current = cell_index

    def _executed(self, cell: Any, cell_index: int, execute_reply: dict[str, Any] | None) -> None:
        if execute_reply is not None:
            self.replies[cell_index] = execute_reply.get("content", {})

    def _timeout(self, cell: Any) -> int:
        index = self.current
        if index >= self.n_student:
            sectioned = self.tail.seconds(index)
            return whole_seconds(sectioned if sectioned is not None else self.limits.probe_timeout)
        return whole_seconds(self.plan.budgets.get(index, self.limits.cell_timeout))

    def _interrupted(self) -> None:
        if self.current in self.timed_out:
            raise Stuck()
        self.timed_out.add(self.current)

    async def run(self) -> Attempt:
        watchdog: asyncio.Task[None] | None = None
        monitors: list[asyncio.Task[None]] = []
        try:
            started = time.monotonic()
            async with self.client.async_setup_kernel(cleanup_kc=True, **self.km.start_kwargs()):
                self.result.startup = time.monotonic() - started
                watchdog = asyncio.ensure_future(self._watch_deadline())
                assert self.client.kc is not None
                monitors = [asyncio.ensure_future(watch(channel, self.km, self.watched))
                            for channel in (self.client.kc.iopub_channel, self.client.kc.shell_channel)
                            for watch in (watch_flood, watch_protocol)]
                await self._cells()
        finally:
            for task in monitors + ([watchdog] if watchdog else []):
                task.cancel()
            self.km.remove_dirs()
        del self.nb.cells[self.n_student:]
        self.result.notebook = self.nb
        return self.result

    async def _watch_deadline(self) -> None:
        await asyncio.sleep(max(0.0, self.plan.deadline - time.monotonic()))
        self.watched.fired = True
        await self.km.shutdown_kernel(now=True)

    async def _cells(self) -> None:
        executed = 0
        for index, cell in enumerate(self.nb.cells):
            if self._passed_over(index, cell):
                continue
            executed += 1
            if index < self.n_student and index in self.plan.warm:  # the kernel starts with its run (see run.execute)
                cell.outputs, cell.execution_count = [], executed
                self.result.cells[index] = CellRun(index, cell["id"], "ok")
                continue
            began = time.monotonic()
            try:
                await self.client.async_execute_cell(cell, index, execution_count=executed)
            except (DeadKernelError, Stuck, CellTimeoutError) as err:
                await self._stopped(index, cell, err, time.monotonic() - began)
                return
            self._record(index, cell, time.monotonic() - began)

    def _passed_over(self, index: int, cell: Any) -> bool:
        """Empty cells, and what an earlier attempt left out, are recorded without running."""
        if index >= self.n_student:
            return self.tail.left_out(index)
        if cell.cell_type != "code" or not cell.source.strip():
            self.result.cells[index] = CellRun(index, cell["id"], "empty")
            return True
        if index in self.plan.skip_cells:
            why = self.plan.skip_cells[index]
            hung = why == "timeout"
            self.result.cells[index] = CellRun(
                index, cell["id"], "timeout" if hung else "dropped",
                evalue="left out: it " + ("ignored the interrupt after its timeout" if hung
                                          else why.replace("the kernel died", "killed the kernel")))
            return True
        return False

    def _record(self, index: int, cell: Any, elapsed: float) -> None:
        reply = self.replies.get(index, {})
        timed_out = index in self.timed_out
        if index >= self.n_student:
            self.result.probe_seconds += elapsed
            self.tail.ran(index, stdout(cell), reply, "timeout" if timed_out else "ok")
            return
        self.result.cell_seconds += elapsed
        if timed_out:
            budget = self.plan.budgets.get(index, self.limits.cell_timeout)
            run = CellRun(index, cell["id"], "timeout", seconds=elapsed, evalue=f"interrupted after {budget:g} s")
        elif reply.get("status") == "error":
            run = CellRun(index, cell["id"], "error", str(reply.get("ename", ""))[:200],
                          readable(str(reply.get("evalue", ""))[:500]),
                          readable(plain_traceback(reply.get("traceback", []) or [])), elapsed)
        else:
            run = CellRun(index, cell["id"], "ok", seconds=elapsed)
        self.result.cells[index] = run

    async def _stopped(self, index: int, cell: Any, err: Exception, elapsed: float) -> None:
        """The kernel died, hung or was stopped in this cell: blame it, and record the rest as not run."""
        await asyncio.sleep(0.3)  # let the flood monitor report first
        fired, flood, garbled = self.watched.fired, self.watched.flood, self.watched.garbled
        timed = fired or not isinstance(err, DeadKernelError)
        status = "timeout" if timed else "died"
        why = (f"flooded its output (a message over {self.limits.max_message_bytes // 2**20} MiB); the kernel was stopped"
               if flood else f"broke the kernel protocol: it sent {garbled}; the kernel was stopped" if garbled
               else "the kernel died while running this cell")
        is_tail = index >= self.n_student
        if garbled and is_tail:
            self.tail.garbled(index, stdout(cell), why)
            self._finish_rest(index + 1, "not-run", "the kernel stopped")
            return
        key: Any = None
        if is_tail:
            key = self.tail.stopped(index, stdout(cell), status, why if not timed else "timed out", fired)
        else:
            self.result.cells[index] = CellRun(index, cell["id"], "timeout" if timed else "dropped",
                                               evalue=why if not timed else "", seconds=elapsed)
        self.result.deadline_hit, self.result.flood = fired, flood
        if not fired:
            self.result.killer = ("tail", key) if is_tail else ("cell", index)
        self._finish_rest(index + 1, "timeout" if fired else "not-run",
                          "the notebook ran past its time limit" if fired else "the kernel stopped")

    def _finish_rest(self, start: int, status: str, why: str) -> None:
        for j in range(start, len(self.nb.cells)):
            if j < self.n_student:
                self.result.cells.setdefault(j, CellRun(j, self.nb.cells[j]["id"], status))
            else:
                self.tail.not_reached(j, status == "timeout", why)
