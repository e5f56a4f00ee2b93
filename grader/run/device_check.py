"""Before any student cell: does the accelerator asked for work in a sandboxed kernel?

A device node on the host says nothing of whether a kernel can use it: the
driver may not answer, the sandbox may lack a library, a memory limit may
break the driver. So, once per process and device, the grader starts a
kernel exactly as a student's would be started (the same sandbox, rlimits and
environment), imports JAX in it, multiplies two matrices on the default
device and reports what JAX used. Only grader code runs in that kernel. A
grade names a device only when this check saw it do that work; what the
kernel reports after the student's cells is kept apart, labelled as reported
by the kernel.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, replace
from typing import Any

import nbformat

from grader.base.limits import Limits
from grader.kernel import devices, isolation, managers
from grader.run import execution

BACKENDS = {"gpu": ("gpu", "cuda", "rocm"), "tpu": ("tpu",), "cpu": ("cpu",)}
"""The JAX backends that count as each `--device` (auto takes whatever JAX finds)."""
SECONDS = 180
"""A cold accelerator can take a minute to initialise and compile; the check has room for that."""
_CELL = r'''
import json as __json
try:
    __jax = __import__("jax")  # the accelerator library every lesson's kernel uses
    __jnp = getattr(__jax, "numpy")
    __product = (__jnp.ones((64, 64)) @ __jnp.ones((64, 64))).block_until_ready()
    __devices = __jax.devices()
    __found = {"backend": __jax.default_backend(), "kind": __devices[0].device_kind, "count": len(__devices),
               "devices": [str(d) for d in __devices[:16]], "computed": float(__product[0, 0]) == 64.0,
               "precision": str(__jax.config.jax_default_matmul_precision)}
except Exception as __err:
    __found = {"error": f"{type(__err).__name__}: {str(__err)[:300]}"}
print(MARK + __json.dumps(__found))
'''


@dataclass(frozen=True)
class DeviceCheck:
    """What JAX did in a sandboxed kernel started for `--device requested`."""

    requested: str
    """The `--device` asked for."""
    works: bool
    """JAX computed on a device of the kind asked for."""
    backend: str | None = None
    """JAX's default backend there (`gpu`, `tpu`, `cpu`)."""
    kind: str | None = None
    """The first device's kind (`NVIDIA H200`, `cpu`)."""
    count: int = 0
    """How many devices JAX saw."""
    precision: str | None = None
    """The default float32 matmul precision in force."""
    why: str = ""
    """Why it does not work, in one line."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the result's environment."""
        return asdict(self)


def used(found: DeviceCheck) -> str:
    """The `--device` name of what the check saw working."""
    return next((device for device, names in BACKENDS.items() if found.backend in names), found.backend or "cpu")


_DONE: dict[tuple[Any, ...], DeviceCheck] = {}


def check(device: str, report: isolation.SandboxReport, limits: Limits) -> DeviceCheck:
    """Start a kernel for `device` as a grade would, and see what JAX does there (once per process, sandbox and
    limits: a batch checks in its parent, before its workers fork)."""
    key = (device, report.mode, report.rootless, tuple(sorted(report.budgets.items())), limits)
    if key not in _DONE:
        _DONE[key] = _check(device, report, limits)
    return _DONE[key]


def _check(device: str, report: isolation.SandboxReport, limits: Limits) -> DeviceCheck:
    mark = f"grader-device-{secrets.token_hex(8)}:"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_CELL.replace("MARK", json.dumps(mark)))])
    roomy = replace(limits, cell_timeout=SECONDS, probe_timeout=SECONDS, notebook_timeout=SECONDS * 2,
                    startup_timeout=max(limits.startup_timeout, 60), cell_timeouts=())
    start = devices.KernelStart(device=device)
    try:
        done = execution.execute(notebook, [], roomy, lambda: managers.started(report, roomy, start))
    except Exception as err:
        return DeviceCheck(device, False, why=f"the kernel did not start ({type(err).__name__}: {str(err)[:200]})")
    cell = done.notebook.cells[0]
    printed = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    line = next((ln for ln in printed.splitlines() if ln.startswith(mark)), None)
    if line is None:
        status = done.cells[0].status if done.cells else "not run"
        return DeviceCheck(device, False, why=f"the kernel reported nothing (its cell: {status})")
    found = json.loads(line[len(mark):])
    if "error" in found:
        return DeviceCheck(device, False, why=f"JAX could not use it: {found['error']}")
    result = DeviceCheck(device, True, found.get("backend"), found.get("kind"), int(found.get("count") or 0),
                         found.get("precision"))
    if not found.get("computed"):
        return replace(result, works=False, why="a matrix product on it came out wrong")
    if device != "auto" and found.get("backend") not in BACKENDS.get(device, (device,)):
        return replace(result, works=False, why=f"JAX ran on {found.get('backend')}, not on a {device}")
    return result
