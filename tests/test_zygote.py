"""zygote: a handle on a kernel that is not the grader's child (a pidfd), and one template per process."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from grader.kernel import zygote


def _pidfd_of(process):
    return os.pidfd_open(process.pid)


def test_a_pidfd_handle_polls_waits_and_kills_like_popen():
    child = subprocess.Popen(["sleep", "30"])
    try:
        handle = zygote.PidfdProcess(_pidfd_of(child))
        assert handle.pid == child.pid and handle.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            handle.wait(timeout=0.1)
        handle.kill()
        child.wait(timeout=10)  # reaped by its parent, as the zygote reaps its children
        assert handle.wait(timeout=10) == -1 and handle.fd is None  # the real status belongs to the parent
        handle.send_signal(signal.SIGTERM)  # a no-op once it is gone
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)


def test_stopping_the_shared_template_without_one_is_harmless():
    zygote.stop_shared()
    zygote.stop_shared()
