"""upstream: the adapter over jupyter_client; each client takes its message bound from its own manager."""

from __future__ import annotations

import zmq
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets.utils.importstring import import_item

from grader.base.limits import Limits
from grader.kernel import upstream


def _manager(bound):
    manager = upstream.QuickKernelManager()
    manager.grade_limits = Limits(max_message_bytes=bound)  # as the sandbox's manager carries a grade's limits
    return manager


def test_each_client_takes_its_bound_from_its_own_manager_and_its_zmq_context_enforces_it():
    assert upstream.BoundedKernelClient().max_message_bytes == upstream.MAX_MESSAGE_BYTES  # no manager: the default
    one, two = upstream.BoundedKernelClient(), upstream.BoundedKernelClient()
    one.parent, two.parent = _manager(1234), _manager(99_999)  # two grades at once, each with its own limits
    assert (one.max_message_bytes, two.max_message_bytes) == (1234, 99_999)
    context = one.context
    try:
        assert context.getsockopt(zmq.MAXMSGSIZE) == 1234 and context.getsockopt(zmq.RCVHWM) == 200
    finally:
        context.destroy(linger=0)


def test_managers_name_the_bounded_client_class():
    assert import_item(upstream.CLIENT_CLASS) is upstream.BoundedKernelClient
    assert upstream.QuickKernelManager().provisioner_factory is None  # by default the kernel command is run


REACHED = {"_context_default": AsyncKernelClient, "_created_context": AsyncKernelClient,
           "_async_wait": AsyncKernelManager, "_async_pre_start_kernel": AsyncKernelManager}
"""Every private name of jupyter_client's that upstream.py uses or overrides, and whose it is."""


def test_every_private_name_upstream_py_reaches_still_exists_upstream():
    """upstream.py's docstring promises that an upgrade which renames what it reaches past fails a test: this one.
    A private name added there and not listed here fails it too."""
    import inspect
    import re

    source = inspect.getsource(upstream)
    used = set(re.findall(r"(?:def |\.)(_[a-z][a-z_]*)\b", source))
    assert used == set(REACHED), f"list the private names upstream.py now reaches: {sorted(used ^ set(REACHED))}"
    for name, owner in REACHED.items():
        found = any(name in vars(klass) for klass in owner.__mro__) or name in owner.class_trait_names() or \
            any(name in inspect.getsource(klass) for klass in owner.__mro__ if klass.__module__.startswith("jupyter_client"))
        assert found, f"{owner.__name__}.{name} is gone from jupyter_client: upstream.py must follow it"
