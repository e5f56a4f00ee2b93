"""run: the kernel handshake, without a kernel (a client whose channels are stand-ins)."""

from __future__ import annotations

import asyncio
import time
from queue import Empty

import pytest

from grader.kernel import upstream


class _Channel:
    def __init__(self, answer):
        self.answer = answer

    async def get_msg(self, timeout=None):
        return self.answer()


class _Client(upstream.BoundedKernelClient):
    """Answers kernel_info one request late (the first request meets a kernel still starting)."""

    shell_channel = iopub_channel = None

    def __init__(self, alive=True, answers=True, iopub=True):
        super().__init__()
        self.sent, self.alive = [], alive
        replies = iter(range(10**6))

        def shell():
            n = next(replies)
            if not answers or n == 0 or n > len(self.sent) - 1:
                raise Empty
            return {"msg_type": "kernel_info_reply", "parent_header": {"msg_id": self.sent[n - 1]},
                    "content": {"protocol_version": "5.4"}}

        def status():
            if not iopub:
                raise Empty
            return {"msg_type": "status"}

        self.shell_channel, self.iopub_channel = _Channel(shell), _Channel(status)

    def kernel_info(self):
        self.sent.append(f"request-{len(self.sent)}")
        return self.sent[-1]

    async def is_alive(self):
        return self.alive


def test_a_kernel_that_answers_an_earlier_request_is_ready():
    client = _Client()
    asyncio.run(client.wait_for_ready(timeout=5))
    assert len(client.sent) == 2  # the second round took the first request's answer


def test_a_dead_or_silent_kernel_is_reported_not_waited_on_forever():
    with pytest.raises(RuntimeError, match="died"):
        asyncio.run(_Client(alive=False).wait_for_ready(timeout=5))
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="didn't respond"):
        asyncio.run(_Client(answers=False).wait_for_ready(timeout=0.05))
    assert time.monotonic() - began < 5
    with pytest.raises(RuntimeError, match="didn't respond"):  # answers, but IOPub never delivers
        asyncio.run(_Client(iopub=False).wait_for_ready(timeout=0.05))
