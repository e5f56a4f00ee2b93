"""A kernel's protocol messages are the student's data: checked at the channel, before anything reads them.

The student's code runs in the kernel, and the kernel writes the Jupyter
messages: a notebook that replaces `json.dumps` there garbles every header
and content it sends. jupyter_client and nbclient trust a message's shape
(`msg_type.startswith(...)`, `content["text"]`), so a garbled one used to
surface as an `AttributeError` deep in nbclient and a grade that never
finished. Here each message is checked as it is received, on every channel
the grader reads (a channel class is a public setting of jupyter_client's
client); one that is malformed, undecodable or ill-typed is never handed on,
and the run stops the kernel: the cell that was running is named and left out
of the next attempt (a probe that garbles the protocol costs the exercises not
yet answered), and the student, never the grader, bears it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from queue import Empty
from typing import Any

import zmq
from jupyter_client.channels import AsyncZMQSocketChannel

_TEXT = (str,)
_OPTIONAL_COUNT = (int, type(None))
CONTENT: dict[str, dict[str, tuple[type, ...]]] = {
    "status": {"execution_state": _TEXT},
    "stream": {"name": _TEXT, "text": _TEXT},
    "error": {"ename": _TEXT, "evalue": _TEXT, "traceback": (list,)},
    "execute_result": {"data": (dict,), "metadata": (dict,), "execution_count": _OPTIONAL_COUNT},
    "display_data": {"data": (dict,), "metadata": (dict,)},
    "update_display_data": {"data": (dict,), "metadata": (dict,)},
    "clear_output": {"wait": (bool,)},
    "execute_reply": {"status": _TEXT},
    "kernel_info_reply": {},
}
"""The content fields that jupyter_client, nbclient, nbformat or the grader read, per message type, and the
types they must have; a message of another type only needs a well-formed envelope."""
OPTIONAL: dict[str, tuple[type, ...]] = {"execution_count": _OPTIONAL_COUNT, "transient": (dict, type(None)),
                                         "ename": _TEXT, "evalue": _TEXT, "traceback": (list,)}
"""Fields that may be absent, but have these types where present."""


def _kind(value: Any) -> str:
    return type(value).__name__


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    """isinstance, except that a bool is not an int here."""
    return bool in kinds if isinstance(value, bool) else isinstance(value, kinds)


def problem(msg: Any) -> str:
    """What is wrong with a received message, or "" when its envelope and the fields that are read are sound."""
    if not isinstance(msg, dict):
        return f"a message that is a {_kind(msg)}, not an object"
    for part in ("header", "parent_header", "metadata", "content"):
        if not isinstance(msg.get(part), dict):
            return f"a message whose {part} is a {_kind(msg.get(part))}, not an object"
    header, parent, content = msg["header"], msg["parent_header"], msg["content"]
    for key in ("msg_id", "msg_type"):
        if not isinstance(header.get(key), str):
            return f"a message whose header field {key!r} is a {_kind(header.get(key))}, not a string"
    if "msg_id" in parent and not isinstance(parent["msg_id"], str):
        return f"a message whose parent's msg_id is a {_kind(parent['msg_id'])}, not a string"
    msg_type = header["msg_type"]
    for key, kinds in CONTENT.get(msg_type, {}).items():
        if not _is(content.get(key), kinds):
            return f"a {msg_type[:40]!r} message whose {key!r} is a {_kind(content.get(key))}"
    if msg_type in CONTENT:
        for key, kinds in OPTIONAL.items():
            if key in content and not _is(content[key], kinds):
                return f"a {msg_type!r} message whose {key!r} is a {_kind(content[key])}"
    if (msg_type == "error" or isinstance(content.get("traceback"), list)) \
            and not all(isinstance(line, str) for line in content.get("traceback") or []):
        return f"a {msg_type!r} message whose traceback holds something other than text"
    data = content.get("data")
    if isinstance(data, dict) and not all(isinstance(k, str) and (isinstance(v, (str, dict)) or isinstance(v, list)
                                                                  and all(isinstance(x, str) for x in v))
                                          for k, v in data.items()):
        return f"a {msg_type!r} message whose data is not text by MIME type"
    return ""


class CheckedChannel(AsyncZMQSocketChannel):
    """A channel that hands on only well-formed messages (see the module's docstring).

    A malformed one is dropped, and what was wrong with the first is kept in `malformed`, with `broken` set: the
    run watches it and stops the kernel, so nbclient meets a dead kernel on its own path.
    """

    malformed = ""
    """What was wrong with the first malformed message, once one arrived."""

    @functools.cached_property
    def broken(self) -> asyncio.Event:
        """Set when the first malformed message arrives (made on first use, inside the running event loop)."""
        return asyncio.Event()

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                msg = await super().get_msg(left)
            except (Empty, zmq.ZMQError, RuntimeError, OSError, asyncio.CancelledError):
                raise  # nothing arrived, or the connection ended: not the message's fault
            except Exception as err:
                wrong = f"a message that could not be decoded ({type(err).__name__}: {str(err)[:120]})"
            else:
                wrong = problem(msg)
                if not wrong:
                    return msg
            if not self.malformed:
                self.malformed = wrong
                self.broken.set()
