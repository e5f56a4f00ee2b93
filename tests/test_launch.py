"""launch.py: the command and environment a kernel starts under, read as a list of promises."""

from __future__ import annotations

import os
from pathlib import Path

from grader.base.limits import Limits
from grader.kernel import launch
from grader.kernel.devices import KernelStart
from grader.kernel.isolation import NOBODY, SandboxReport


def _report(rootless=False, own_namespace=True):
    return SandboxReport("bwrap", {}, rootless=rootless, budgets={"own_user_namespace": own_namespace})


def _after(argv, flag):
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == flag]


def test_nothing_of_the_graders_environment_reaches_the_kernel(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    monkeypatch.setenv("GRADER_KEY", "/secret/course.key")
    env = launch.kernel_env(tmp_path, KernelStart(hash_seed=1234))
    assert "AWS_SECRET_ACCESS_KEY" not in env and "GRADER_KEY" not in env
    assert env["PYTHONHASHSEED"] == "1234" and env["HOME"] == str(tmp_path)
    assert env["JAX_DEFAULT_MATMUL_PRECISION"] == "highest"  # the contract's full matmul precision
    argv = launch.bwrap_argv(tmp_path, tmp_path, Limits(), _report(), KernelStart())
    assert "--clearenv" in argv and "hunter2" not in " ".join(argv)


def test_as_root_the_kernel_becomes_nobody_without_capabilities_under_the_limits(tmp_path):
    limits = Limits(memory_bytes=123 * 1024**2, processes=77, file_bytes=5_000, open_files=99, cpu_seconds=42)
    argv = launch.bwrap_argv(tmp_path / "run", tmp_path / "scratch", limits, _report(), KernelStart())
    setpriv = argv.index("setpriv")
    assert argv[setpriv:setpriv + 8] == ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                         "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    assert argv.index("unshare") > setpriv  # a user namespace of its own, after dropping to nobody
    prlimit = argv[argv.index("prlimit"):]
    assert prlimit == ["prlimit", f"--as={123 * 1024**2}", "--nproc=77", "--fsize=5000", "--nofile=99", "--core=0",
                       "--cpu=42", "--"]
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"):
        assert flag in argv


def test_only_the_run_and_scratch_folders_are_writable(tmp_path):
    run, scratch = tmp_path / "run", tmp_path / "scratch"
    argv = launch.bwrap_argv(run, scratch, Limits(), _report(), KernelStart())
    assert _after(argv, "--bind") == [str(run), str(scratch)]
    assert "--remount-ro" in argv and _after(argv, "--chdir") == [str(scratch)]


def test_rootless_maps_nobody_and_refuses_further_namespaces(tmp_path):
    argv = launch.bwrap_argv(tmp_path, tmp_path, Limits(), _report(rootless=True), KernelStart())
    assert argv[argv.index("--unshare-user"):argv.index("--unshare-user") + 5] == [
        "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    assert "--disable-userns" in argv and "setpriv" not in argv and _after(argv, "--cap-drop") == ["ALL"]


def test_the_interpreter_path_is_absolute_without_dot_dots():
    path = launch.python()
    assert os.path.isabs(path) and ".." not in Path(path).parts
