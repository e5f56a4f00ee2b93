"""How to grade: the options every command builds.

Kept apart from grading so that a command can start the batch's kernel
template (warm_start) before it imports the grading machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.base.limits import Limits

MAX_HASH_SEED = 2**32 - 1
"""The largest PYTHONHASHSEED Python accepts."""
MAX_SEED = 2**53 - 1
"""The largest hidden-case seed: a signed result's integers stay exact in JSON (RFC 8785)."""


@dataclass(frozen=True)
class Options:
    """How to grade, whoever is graded. Precedence: CLI flags > these fields > `Limits` defaults. What one student
    meets (their seeds, numbers and handout key) is their draw (lesson/draw.py), not an option."""

    limits: Limits = Limits()
    """Time, memory and output bounds."""
    public_only: bool = False
    """Only the public checks (`grader check`): no hidden cases, no reference needed."""
    sandbox: str = "auto"
    """`auto`, `bwrap` or `none`."""
    require_sandbox: bool = False
    """Refuse to grade when an isolation layer is missing."""
    jobs_at_once: int = 1
    """How many grades ran concurrently (recorded with the measurements)."""
    zygote: bool = False
    """Fork each single-use kernel from a warm zygote (batch grading); bubblewrap only."""
    device: str = "cpu"
    """JAX backend for the kernel: `cpu`, `gpu`, `tpu` or `auto` (what JAX finds)."""
    device_fallback: bool = False
    """Grade on the CPU when the requested device is absent (else refuse, saying so)."""
