"""The one place that reaches past jupyter_client's public API (checked against jupyter_client 8.10.0).

Everything else in the grader uses public names only: nbclient's `on_cell_start`
and `on_cell_executed` hooks and `timeout_func`, jupyter_client's
`interrupt_kernel`, `kernel_spec`, `client_class` and `start_kernel`. Three
things have no public way, and each is kept here, small, with why; the versions
are pinned in pyproject.toml, and tests/test_upstream.py fails if an upgrade
moves a private name used here (the kernel tests, if one changes its meaning):

- `BoundedKernelClient._context_default`: the ZMQ context a client creates is
  a traitlets default; its options (MAXMSGSIZE, RCVHWM) can only be set where
  it is made, and `_created_context` tells `stop_channels()` to destroy it.
  nbclient makes the client itself (`km.client()`), so none can be passed in.
- `BoundedKernelClient.wait_for_ready`: jupyter_client's own check, minus its
  closing 0.2 s drain of IOPub (nbclient reads IOPub by parent id, so the
  handshake's status messages never reach a cell): 0.2 s of every kernel start.
- `QuickKernelManager`: `_async_wait` polls every 0.1 s for a killed kernel to
  vanish (a single-use kernel is gone within milliseconds, and every grade pays
  the wait), and a provisioner can only be chosen through an installed entry
  point, not per manager, so `_async_pre_start_kernel` takes one from a factory
  (the zygote's forked kernels).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type

from grader.kernel import protocol

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The bound on one ZMQ message when the manager states none (its `grade_limits.max_message_bytes`)."""


class BoundedKernelClient(AsyncKernelClient):
    """Refuses oversized ZMQ messages, so a flood cannot grow the grader's memory, and malformed ones
    (protocol.py), so a garbled protocol is the student's error, never the grader's."""

    shell_channel_class = Type(protocol.CheckedChannel)
    iopub_channel_class = Type(protocol.CheckedChannel)
    stdin_channel_class = Type(protocol.CheckedChannel)
    control_channel_class = Type(protocol.CheckedChannel)

    @property
    def max_message_bytes(self) -> int:
        """The bound of the manager that made this client (`parent`), so no process-wide setting changes."""
        limits = getattr(self.parent, "grade_limits", None)
        return int(getattr(limits, "max_message_bytes", MAX_MESSAGE_BYTES))

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """Ready once the kernel answers kernel_info and IOPub delivers (see the module's docstring)."""
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


CLIENT_CLASS = f"{__name__}.BoundedKernelClient"
"""What a manager's public `client_class` names, so that nbclient's `km.client()` makes a bounded client."""


class QuickKernelManager(AsyncKernelManager):
    """An AsyncKernelManager that reaps a killed kernel without 0.1 s polls and takes its provisioner from a
    factory (see the module's docstring)."""

    provisioner_factory: Callable[[Any], Any] | None = None
    """Set to launch the kernel another way (the zygote); None runs the kernel command."""

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        await super()._async_wait(pollinterval=0.005)

    async def _async_pre_start_kernel(self, **kw: Any) -> Any:
        if self.provisioner is None and self.provisioner_factory is not None:
            self.kernel_id = self.kernel_id or str(uuid.uuid4())
            self.provisioner = self.provisioner_factory(self)
        return await super()._async_pre_start_kernel(**kw)
