"""Receipts: results signed with the course key (Ed25519), and their verification offline.

A result is signed over its canonical JSON: keys sorted, no spaces, ASCII,
non-finite numbers as the strings "NaN", "Infinity" and "-Infinity", the
`signature` field left out. The signed result carries SHA-256 digests of the
files it stands for (the submission as received, the executed notebook, the
reports, the lesson and the reference) and a digest of each of its own
top-level fields, so a verifier can name what was changed, not only that
something was. The private key stays where it was made (the course's private
folder, owner-only) and is read only by the process that writes records.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from grader.base import files, host, notices
from grader.base.errors import GraderError
from grader.base.shapes import mapping
from grader.lesson import catalog, course, draw

KEY_NAME = "course.key"
PUBLIC_NAME = "course.pub"
SIGNATURE = "signature"
FIELD_DIGESTS = "field_digests"


class KeyProblem(GraderError):
    """A key that cannot be made, read or used (one line, exit 2)."""


def key_dir() -> Path:
    """The user's config folder (XDG): where keys were kept before a course kept its own; still read as a fallback
    by a course that has none."""
    return host.config_root()


def _course_file(name: str) -> Path | None:
    """`name` in the course's private state folder, where the course has one."""
    private = course.current().private
    return private / name if private is not None else None


def key_path() -> Path | None:
    """The course key in force: `GRADER_KEY`, else the course's own (private/course.key), else the account's in the
    config folder (said once: every course without a key of its own shares it), else None."""
    named = os.environ.get("GRADER_KEY")
    if named:
        return Path(named)
    own = _course_file(KEY_NAME)
    if own is not None and own.is_file():
        return own
    shared = key_dir() / KEY_NAME
    if shared.is_file():
        where = f"; `grader keys init` makes its own in {own.parent}" if own is not None else ""
        notices.once(f"{course.current().label} has no key of its own: results are signed with {shared}, this "
                     f"account's key (shared by every course without one){where}")
        return shared
    return None


def init(folder: Path | None = None) -> tuple[Path, Path]:
    """Make a new course key pair in `folder` (default: the course's private folder); an existing key is never
    overwritten."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    folder = Path(folder) if folder else default_folder()
    key_path, pub_path = folder / KEY_NAME, folder / PUBLIC_NAME
    if key_path.exists():
        raise KeyProblem(f"{key_path} already exists; keep it (results signed with it verify only with its "
                        "course.pub), or make the new key in another folder with --dir")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    private = Ed25519PrivateKey.generate()
    files.write_bytes(key_path, private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                      serialization.NoEncryption()), private=True)
    files.write_bytes(pub_path, private.public_key().public_bytes(serialization.Encoding.PEM,
                                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    return key_path, pub_path


def default_folder() -> Path:
    """Where a course's key and secret are made: its private folder (0700), or the config folder without a course."""
    return course.private_folder() if course.current().root is not None else key_dir()


def signing_key() -> Any:
    """The course's private key (key_path), or None where there is none."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = key_path()
    if path is None:
        return None
    if not path.is_file():
        raise KeyProblem(f"GRADER_KEY names {path}, which is not a file")
    return _load(path, lambda data: serialization.load_pem_private_key(data, password=None), Ed25519PrivateKey,
                 "course key")


def course_public_key_path() -> Path:
    """`course.pub` beside the course key in force (key_path), or one line saying to pass --key."""
    key = key_path()
    path = key.parent / PUBLIC_NAME if key is not None else (_course_file(PUBLIC_NAME) or key_dir() / PUBLIC_NAME)
    if not path.is_file():
        raise KeyProblem(f"no course public key at {path}: pass --key course.pub (the course gives it to anyone who "
                         "verifies)")
    return path


def public_key(path: Path) -> Any:
    """A course.pub file as a key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return _load(Path(path), serialization.load_pem_public_key, Ed25519PublicKey, "public key")


def _load(path: Path, loader: Any, kind: type, what: str) -> Any:
    try:
        key = loader(path.read_bytes())
    except (OSError, ValueError, TypeError) as err:
        raise KeyProblem(f"{path}: not a {what} this tool can read ({err})") from None
    if not isinstance(key, kind):
        raise KeyProblem(f"{path}: not an Ed25519 {what}")
    return key


def fingerprint(key: Any) -> str:
    """A short, stable name for a key: the start of the SHA-256 of its raw public bytes."""
    from cryptography.hazmat.primitives import serialization

    public = key.public_key() if hasattr(key, "public_key") else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + hashlib.sha256(raw).hexdigest()[:32]


CANONICAL = "rfc8785"
"""The canonical form a signature covers, named in the signature: RFC 8785 (JCS) over `tagged` values."""
TAG_NONFINITE, TAG_INT = "$nonfinite", "$int"
SAFE_INT = 2**53 - 1


def tagged(value: Any) -> Any:
    """A value RFC 8785 can encode, one to one: NaN and the infinities become {"$nonfinite": "NaN"} and the
    like (never the same as the string "NaN"), integers past 2^53 {"$int": "<digits>"}, and every key that
    begins with `$` gets one more, so no key of the data can pass for a tag."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {TAG_NONFINITE: "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, int):
        return value if -SAFE_INT <= value <= SAFE_INT else {TAG_INT: str(value)}
    if isinstance(value, dict):
        return {("$" + key if key.startswith("$") else key): tagged(v) for key, v in ((str(k), v) for k, v in value.items())}
    if isinstance(value, (list, tuple)):
        return [tagged(v) for v in value]
    return str(value)


def canonical(value: Any) -> bytes:
    """The bytes that are signed: RFC 8785's canonical JSON of the tagged value, the signature left out."""
    import rfc8785

    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != SIGNATURE}
    return rfc8785.dumps(tagged(value))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def legacy_canonical(value: Any) -> bytes:
    """The form results were signed over before RFC 8785 (sorted keys, non-finite numbers as strings): it let a
    NaN and the string "NaN" sign alike, so such a signature verifies only as `legacy`, never `intact`."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != SIGNATURE}
    return json.dumps(_finite(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False, default=str).encode("ascii")


class DuplicateKey(ValueError):
    """A JSON object that names one key twice: which value counts depends on the reader."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKey(f"the key {key!r} appears twice in one object")
        seen[key] = value
    return seen


def strict_loads(text: str | bytes) -> Any:
    """Parse JSON to be verified: a key twice in one object is refused (DuplicateKey), never resolved."""
    return json.loads(text, object_pairs_hook=_no_duplicates)


def digest(data: bytes | str) -> str:
    """SHA-256, hex."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def folder_digest(folder: Path, names: tuple[str, ...]) -> str | None:
    """One digest over the named files of a folder (those that exist), in order; None if none exists."""
    found = [(name, (folder / name).read_bytes()) for name in names if (folder / name).is_file()]
    if not found:
        return None
    return digest(b"".join(name.encode() + b"\0" + digest(body).encode() + b"\n" for name, body in found))


def _field_digests(data: dict[str, Any], form: Any = None) -> dict[str, str]:
    form = form or canonical
    return {key: digest(form(value)) for key, value in sorted(data.items())
            if key not in (SIGNATURE, FIELD_DIGESTS)}


def sign(data: dict[str, Any], key: Any) -> dict[str, Any]:
    """The result with its field digests and a signature over the whole (the key never leaves this process)."""
    signed = {k: v for k, v in data.items() if k != SIGNATURE}
    signed[FIELD_DIGESTS] = _field_digests(signed)
    value = key.sign(canonical(signed))
    signed[SIGNATURE] = {"algorithm": "ed25519", "canonical": CANONICAL, "key": fingerprint(key),
                         "value": base64.b64encode(value).decode("ascii")}
    return signed


def lesson_digests(lesson: catalog.Lesson | None) -> tuple[str | None, str | None]:
    """(lesson, reference) digests of a lesson's folders as they are when a result is recorded (a few small files,
    read at each record: never a stale value a long-lived server kept); (None, None) for no lesson."""
    if lesson is None:
        return None, None
    return (folder_digest(lesson.folder, ("lesson.toml", "scaffold.py", "properties.py")),
            folder_digest(lesson.solutions, ("answers.py", "hidden.py")))


def stamp(data: dict[str, Any], key: Any, *, notebook: str | None, report: str | None,
          markdown: str | None, lesson: catalog.Lesson | None = None) -> dict[str, Any]:
    """The result as it is recorded: the digests of what it stands for, then the signature (or `unsigned`).

    `lesson`: the lesson the result names, where the caller holds it (a batch); else it is looked up by the id the
    result names. A self-check used no reference, so its result names none.
    """
    data = dict(data)
    if lesson is None or lesson.id != data.get("lesson"):
        named = data.get("lesson")
        lesson = catalog.get(named) if isinstance(named, str) and named in catalog.available() else None
    lesson_digest, reference = lesson_digests(lesson)
    data["digests"] = {
        "submission": data.get("digest"),
        "notebook": digest(notebook) if notebook else None,
        "report": digest(report) if report else None,
        "report_md": digest(markdown) if markdown else None,
        "lesson": lesson_digest,
        "reference": None if data.get("mode") == "check" else reference,
    }
    return sign(data, key) if key is not None else unsigned(data)


def unsigned(data: dict[str, Any]) -> dict[str, Any]:
    """The result marked as carrying no signature (no course key here)."""
    return {**{k: v for k, v in data.items() if k != SIGNATURE}, SIGNATURE: None}


def check(data: Any, key: Any) -> tuple[str, str]:
    """(`intact` | `altered` | `legacy` | `unsigned` | `other key`, what): a result checked against the course's
    public key. `legacy`: signed over the form used before RFC 8785, which cannot tell some edits apart."""
    from cryptography.exceptions import InvalidSignature

    if not isinstance(data, dict):
        return "altered", "not a result"
    stamp = data.get(SIGNATURE)
    if not stamp:
        return "unsigned", "no course key signed it"
    if not isinstance(stamp, dict) or not isinstance(stamp.get("value"), str):
        return "altered", "the signature field"
    if key is None:
        return "unverified", f"signed with {stamp.get('key')}; pass --key course.pub to check it"
    if stamp.get("key") != fingerprint(key):
        return "other key", f"signed with {stamp.get('key')}, not {fingerprint(key)}"
    try:
        signature = base64.b64decode(stamp["value"], validate=True)
    except ValueError:
        return "altered", "the signature field"
    form = canonical if stamp.get("canonical") == CANONICAL else legacy_canonical
    try:
        key.verify(signature, form(data))
        return ("intact", "") if form is canonical else (
            "legacy", "signed before results were signed as RFC 8785 JSON: grade it again for a receipt that binds")
    except (InvalidSignature, ValueError, TypeError):
        pass
    stored = mapping(data, FIELD_DIGESTS)
    now = _field_digests(data, form)
    changed = sorted(k for k in set(now) | set(stored) if now.get(k) != stored.get(k))
    return "altered", ("field " + ", ".join(changed)) if changed else "the signed fields or their digests"


def init_course(folder: Path | None) -> list[str]:
    """`grader keys init`: the course key pair and the course secret in `folder` (default: the course's private
    folder, 0700); where the key exists already, only a missing secret is made. What was made, in lines for the
    instructor."""
    where = Path(folder) if folder else default_folder()
    try:
        key_path, pub_path = init(where)
    except KeyProblem:
        made = draw.make_secret(where) if (where / KEY_NAME).exists() else None
        if made is None:
            raise
        return [f"{made} (the course secret, added beside the existing key: hidden cases are drawn from it; "
                "back it up, never share it)"]
    secret = draw.make_secret(where)
    return [f"{key_path} (private: back it up, never share it)", f"{pub_path} (public: give it to whoever verifies)",
            *([f"{secret} (the course secret: hidden cases are drawn from it; back it up, never share it)"]
              if secret else []),
            f"fingerprint {fingerprint(public_key(pub_path))}"]
