"""upstream: the adapter over jupyter_client; each client takes its message bound from its own manager."""

from __future__ import annotations

import zmq
from traitlets.utils.importstring import import_item

from grader import upstream
from grader.limits import Limits


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
