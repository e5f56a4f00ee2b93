"""isolation.py: what a grade's record says about its isolation, derived from the layers that held."""

from __future__ import annotations

import os

from grader.kernel import isolation

ALL = dict.fromkeys(isolation.LAYERS, True)


def test_isolated_needs_every_isolation_layer_and_nothing_else():
    assert isolation.SandboxReport("bwrap", ALL).isolated
    assert not isolation.SandboxReport("bwrap", dict(ALL, network=False)).isolated
    assert isolation.SandboxReport("bwrap", dict(ALL, rlimits=False, session=False)).isolated  # not ISOLATION layers


def test_who_the_kernel_runs_as():
    assert isolation.SandboxReport("bwrap", ALL).kernel_as == "nobody"
    assert isolation.SandboxReport("bwrap+zygote", ALL, rootless=True).kernel_as == "user"
    assert isolation.SandboxReport("nobody", ALL).kernel_as == "nobody"
    assert isolation.SandboxReport("process", {}).kernel_as == ("root" if os.geteuid() == 0 else "user")
    assert isolation.as_nobody(isolation.SandboxReport("bwrap", ALL))
    assert not isolation.as_nobody(isolation.SandboxReport("bwrap", ALL, rootless=True))


def test_the_record_lists_what_is_missing():
    data = isolation.SandboxReport("process", dict(ALL, network=False, user=False), missing_reason="no bwrap").to_dict()
    assert data["missing"] == ["network", "user"] and data["isolated"] is False and data["missing_reason"] == "no bwrap"


def test_run_root_is_short_and_per_user(monkeypatch):
    monkeypatch.delenv("GRADER_RUNROOT", raising=False)
    assert str(isolation.run_root()) == f"/tmp/grader-{os.getuid()}"
    monkeypatch.setenv("GRADER_RUNROOT", "/tmp/x")
    assert str(isolation.run_root()) == "/tmp/x"
