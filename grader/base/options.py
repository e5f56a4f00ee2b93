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
    """How to grade. Precedence: CLI flags > these fields > `Limits` defaults."""

    limits: Limits = Limits()
    """Time, memory and output bounds."""
    seed: int | None = None
    """Seed for hidden cases; None derives the student's own (seeds.py; recorded in the result)."""
    seed_from: str = "given"
    """Where a given `seed` came from, as the result records it (a batch derives each student's in its parent)."""
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
    hash_seed: int | None = None
    """The kernel's PYTHONHASHSEED; None derives it from `seed` (a batch draws one for all its kernels)."""
    device: str = "cpu"
    """JAX backend for the kernel: `cpu`, `gpu`, `tpu` or `auto` (what JAX finds)."""
    variant: tuple[tuple[str, float], ...] | None = None
    """The student's own numbers, decided by a batch's parent (so cluster workers need no course secret); None
    derives them where the course turned variants on for the lesson (variants.py), else the seed's."""
    handout_key: str | None = None
    """The key a lesson's handouts are marked with (variants.handout_key), decided by a batch's parent so that its
    workers need no course secret; None derives it where the grade runs."""
    device_fallback: bool = False
    """Grade on the CPU when the requested device is absent (else refuse, saying so)."""
