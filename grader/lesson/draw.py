"""What one student meets, decided once, as a value: the hidden-case seed and where it came from, the kernel's hash
seed, the student's own numbers and the key their handout is marked with (`Draw`).

`decide` is the one function that makes it, from the lesson, the student, what the command line or a recorded
result fixes (`Given`: `--seed`, `--hash-seed`, a regrade's recorded seeds), the course secret and whether the
course grades the lesson per student. A batch's parent, or a service's lesson host, decides each student's draw
whole, so its workers and a cluster's never read the secret; `grade` decides it where it was not handed one.

The same submission graded anywhere (`grade`, `check`, `batch`, the cluster,
Gradescope, PrairieLearn), any number of times, gets the same draw, so the same
hidden cases and the same score; two students get different ones. The secret
(`course.secret` in the course's private folder, made by `grader keys init`
beside the course key, 0600, or named by `GRADER_SECRET`) keeps the draws from
being computed by students. Without it the seed is still derived, from the
lesson and the student alone: grades stay repeatable, and the result says no
secret was used. `--seed N` replays any recorded grade, whatever its seed's
origin. A student's numbers are drawn per name, independently, where the course
grades the lesson per student (`variants = true` in course.toml, or `grader
release --variants`, recorded in `private/variants.json`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import files, host, notices
from grader.base.errors import GraderError
from grader.base.options import MAX_HASH_SEED, MAX_SEED
from grader.lesson import course

SECRET_NAME = "course.secret"
SECRET_BYTES = 32
_NO_SECRET = b"inference-grader: no course secret"
RECORD_NAME = "variants.json"


@dataclass(frozen=True)
class Given:
    """What the command line (`--seed`, `--hash-seed`) or a recorded result fixes of a draw; None: derived."""

    seed: int | None = None
    seed_from: str = "given"
    """Where a given seed came from, as the result records it (`given`, or a regrade's recorded origin)."""
    hash_seed: int | None = None


@dataclass(frozen=True)
class Draw:
    """What one student meets, decided: a grade handed one derives nothing and reads no secret."""

    seed: int
    seed_from: str
    """`given`, `course secret`, `lesson and student`, or "" for a self-check (no hidden cases)."""
    hash_seed: int
    """The kernel's PYTHONHASHSEED."""
    numbers: tuple[tuple[str, float], ...] | None
    """The student's own numbers (name, value), sorted; None: the seed's, which every handout states."""
    handout_key: str
    """The key the lesson's handouts are marked with in this course (variants.owner_mark)."""

    def own_numbers(self) -> dict[str, float] | None:
        return dict(self.numbers) if self.numbers is not None else None


def decide(lesson: Any, student: str, given: Given = Given(), *, public_only: bool = False,
           secret: bytes | None, per_student: bool) -> Draw:
    """The one rule: a given seed is kept, else the student's own is derived (none for a self-check); a given hash
    seed is kept, else it follows the seed; their own numbers where the course grades the lesson per student."""
    if given.seed is not None:
        seed, seed_from = given.seed, given.seed_from
    elif public_only:
        seed, seed_from = 0, ""
    else:
        seed, seed_from = hidden_seed(lesson.id, student, secret), "course secret" if secret else "lesson and student"
    numbers = tuple(sorted(numbers_for(lesson, student, secret).items())) if per_student and lesson.variants else None
    return Draw(seed, seed_from, hash_seed_for(given.hash_seed, seed, public_only), numbers,
                handout_key(lesson.id, secret))


def hash_seed_for(given: int | None, seed: int, public_only: bool = False) -> int:
    """The hash seed of a grade: given, or derived from the hidden-case seed (0 for a self-check)."""
    if given is not None:
        return given
    return 0 if public_only else seed % (MAX_HASH_SEED + 1)


def _hmac(secret: bytes | None, *parts: str) -> int:
    message = "\0".join(("inference-grader seed", *parts)).encode("utf-8", "surrogateescape")
    return int.from_bytes(hmac.new(secret or _NO_SECRET, message, hashlib.sha256).digest()[:8], "big")


def hidden_seed(lesson_id: str, student: str, secret: bytes | None = None) -> int:
    """The hidden-case seed of one student's grade of one lesson (in 0..MAX_SEED)."""
    return _hmac(secret, "hidden", lesson_id, student) % (MAX_SEED + 1)


def batch_hash_seed(lesson_id: str, secret: bytes | None = None) -> int:
    """The PYTHONHASHSEED of a lesson's batch template (every kernel it forks), the same on every rerun."""
    return _hmac(secret, "hash", lesson_id) % (MAX_HASH_SEED + 1)


def batch_hash_seed_for(lesson_id: str, given: int | None, recorded: int | None = None) -> int:
    """The one rule for a batch's hash seed, decided once (the CLI asks it before the template starts, the batch
    keeps what the CLI decided): the one given, else the one a regrade's results recorded, else derived."""
    if given is not None:
        return given
    return recorded if recorded is not None else batch_hash_seed(lesson_id, course_secret())


def numbers_for(lesson: Any, student: str, secret: bytes | None) -> dict[str, float]:
    """A student's numbers: each drawn from its choices by an HMAC of the lesson, the student and its name."""
    drawn = {}
    for name, choices in lesson.variants:
        message = "\0".join(("inference-grader variant", lesson.id, student, name)).encode("utf-8", "surrogateescape")
        digest = hmac.new(secret or _NO_SECRET, message, hashlib.sha256).digest()
        drawn[name] = choices[int.from_bytes(digest[:8], "big") % len(choices)]
    return drawn


def handout_key(lesson_id: str, secret: bytes | None) -> str:
    """The key a lesson's handouts are marked with, derived from the course secret (a batch hands it to its workers,
    which never see the secret itself)."""
    message = "\0".join(("inference-grader handout key", lesson_id)).encode("utf-8", "surrogateescape")
    return hmac.new(secret or _NO_SECRET, message, hashlib.sha256).hexdigest()


# -- the course's part: its secret, and which lessons it grades per student -----------------------------------------
class SecretProblem(GraderError):
    """A course secret that cannot be read (one line, exit 2)."""


def secret_path() -> Path:
    """`GRADER_SECRET`, else the course's own (private/course.secret), else this account's in the config folder (said
    once: every course without a secret of its own shares it), else where the course's own would be made."""
    named = os.environ.get("GRADER_SECRET")
    if named:
        return Path(named)
    here = course.current()
    own = here.private / SECRET_NAME if here.private is not None else None
    if own is not None and own.is_file():
        return own
    shared = host.config_root() / SECRET_NAME
    if shared.is_file():
        notices.once(f"{here.label} has no secret of its own: hidden cases are drawn from {shared}, this account's "
                     "secret (shared by every course without one)"
                     + (f"; `grader keys init` makes its own in {own.parent}" if own is not None else ""))
        return shared
    return own or shared


def course_secret() -> bytes | None:
    """The course secret's bytes, or None where there is none (a student's machine)."""
    path = secret_path()
    try:
        data = files.read_regular(path, 4096).strip()
    except FileNotFoundError:
        if os.environ.get("GRADER_SECRET"):
            raise SecretProblem(f"GRADER_SECRET names {path}, which is not a file") from None
        return None
    except OSError as err:
        raise SecretProblem(f"cannot read the course secret {path}: {err.strerror or err}") from None
    if len(data) < 16:
        raise SecretProblem(f"the course secret {path} is too short to keep hidden cases hidden (make one with "
                            "grader keys init)")
    return data


def make_secret(folder: Path) -> Path | None:
    """Write a new course secret in `folder` (0600); an existing one is kept (returns None then)."""
    path = Path(folder) / SECRET_NAME
    if path.exists() or path.is_symlink():
        return None
    files.write_bytes(path, secrets.token_hex(SECRET_BYTES).encode() + b"\n", private=True)
    return path


def record_path() -> Path | None:
    """Where the course records which lessons it released per student: its private folder (None without a course)."""
    private = course.current().private
    return private / RECORD_NAME if private is not None else None


def released() -> list[str]:
    """The lessons this course released per student (`release --variants`), from its private record."""
    path = record_path()
    if path is None:
        return []
    try:
        data = json.loads(files.read_regular(path, 1 << 20))
    except (OSError, ValueError):
        return []
    found = data.get("lessons") if isinstance(data, dict) else None
    return sorted(str(i) for i in found) if isinstance(found, list) else []


def enabled(lesson_id: str) -> bool:
    """Whether this course grades the lesson per student: course.toml's `variants` where it says, else whether the
    course released it with --variants. Another course's choice never counts here."""
    said = course.current().policy(lesson_id).variants
    return said if said is not None else lesson_id in released()
