"""Where every hidden-case seed comes from: the course secret, the lesson and the student.

The same submission graded anywhere (`grade`, `check`, `batch`, the cluster,
Gradescope, PrairieLearn), any number of times, gets the same seed, so the same
hidden cases and the same score; two students get different ones. The secret
(`course.secret` in the course's private folder, made by `grader keys init`
beside the course key, 0600, or named by `GRADER_SECRET`) keeps the draws from being computed by students.
Without it the seed is still derived, from the lesson and the student alone:
grades stay repeatable, and the result says no secret was used. `--seed N`
replays any recorded grade, whatever its seed's origin.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from grader.base import notices
from grader.base.errors import GraderError
from grader.base.options import MAX_HASH_SEED, MAX_SEED
from grader.lesson import course

SECRET_NAME = "course.secret"
SECRET_BYTES = 32
_NO_SECRET = b"inference-grader: no course secret"


class SecretProblem(GraderError):
    """A course secret that cannot be read (one line, exit 2)."""


def secret_path() -> Path:
    """`GRADER_SECRET`, else the course's own (private/course.secret), else this account's in the config folder (said
    once: every course without a secret of its own shares it), else where the course's own would be made."""
    from grader.result import sign

    named = os.environ.get("GRADER_SECRET")
    if named:
        return Path(named)
    here = course.current()
    own = here.private / SECRET_NAME if here.private is not None else None
    if own is not None and own.is_file():
        return own
    shared = sign.key_dir() / SECRET_NAME
    if shared.is_file():
        notices.once(f"{here.label} has no secret of its own: hidden cases are drawn from {shared}, this account's "
                     "secret (shared by every course without one)"
                     + (f"; `grader keys init` makes its own in {own.parent}" if own is not None else ""))
        return shared
    return own or shared


def course_secret() -> bytes | None:
    """The course secret's bytes, or None where there is none (a student's machine)."""
    from grader.base import files

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
    from grader.base import files

    path = Path(folder) / SECRET_NAME
    if path.exists() or path.is_symlink():
        return None
    files.write_bytes(path, secrets.token_hex(SECRET_BYTES).encode() + b"\n", private=True)
    return path


def _draw(secret: bytes | None, *parts: str) -> int:
    message = "\0".join(("inference-grader seed", *parts)).encode("utf-8", "surrogateescape")
    return int.from_bytes(hmac.new(secret or _NO_SECRET, message, hashlib.sha256).digest()[:8], "big")


def hidden_seed(lesson_id: str, student: str, secret: bytes | None = None) -> int:
    """The hidden-case seed of one student's grade of one lesson (in 0..MAX_SEED)."""
    return _draw(secret, "hidden", lesson_id, student) % (MAX_SEED + 1)


def batch_hash_seed(lesson_id: str, secret: bytes | None = None) -> int:
    """The PYTHONHASHSEED of a lesson's batch template (every kernel it forks), the same on every rerun."""
    return _draw(secret, "hash", lesson_id) % (MAX_HASH_SEED + 1)


def batch_hash_seed_for(lesson_id: str, given: int | None, recorded: int | None = None) -> int:
    """The one rule for a batch's hash seed, decided once (the CLI asks it before the template starts, the batch
    keeps what the CLI decided): the one given, else the one a regrade's results recorded, else derived."""
    if given is not None:
        return given
    return recorded if recorded is not None else batch_hash_seed(lesson_id, course_secret())


def trusted(value: object, largest: int) -> bool:
    """Whether a recorded seed is one `--seed` would take: an int (not a bool) in 0..largest."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= largest


def init_course(folder: Path | None) -> list[str]:
    """`grader keys init`: the course key pair and the course secret in `folder` (default: the course's private
    folder, 0700); where the key exists already, only a missing secret is made. What was made, in lines for the
    instructor."""
    from grader.result import sign

    where = Path(folder) if folder else sign.default_folder()
    try:
        key_path, pub_path = sign.init(where)
    except sign.KeyProblem:
        made = make_secret(where) if (where / sign.KEY_NAME).exists() else None
        if made is None:
            raise
        return [f"{made} (the course secret, added beside the existing key: hidden cases are drawn from it; "
                "back it up, never share it)"]
    secret = make_secret(where)
    return [f"{key_path} (private: back it up, never share it)", f"{pub_path} (public: give it to whoever verifies)",
            *([f"{secret} (the course secret: hidden cases are drawn from it; back it up, never share it)"]
              if secret else []),
            f"fingerprint {sign.fingerprint(sign.public_key(pub_path))}"]
