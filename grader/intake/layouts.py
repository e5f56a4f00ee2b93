"""Load (a class): find each student's submission in the layout an LMS downloads.

A class arrives as a folder or a `.zip` in one of the layouts courses actually
download; the layout is detected, named in the batch summary, and gives each
student id:

- `flat`: `<student>.ipynb` / `<student>.py`;
- `per-student`: `<student>/<any file>`;
- `nbgrader`: `submitted/<student>/<assignment>/<files>`;
- `canvas`: `<name>[_LATE]_<user id>_<submission id>_<file>` (the student id is the user id);
- `moodle`: `<Full Name>_<id>_assignsubmission_file_/<files>` (the student id is the participant id).

Only a short fixed list of names that are never submissions (READMEs, `.txt`
and `.md` notes, `.DS_Store`, notebook checkpoints, hidden files, macOS zip
metadata) is ignored, and listed once; every other file that belongs to a
student is that student's, gradable or not.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import stat
import unicodedata
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.base import files
from grader.base.errors import GraderError

LAYOUTS = ("flat", "per-student", "nbgrader", "canvas", "moodle")
IGNORED_NAMES = {".ds_store", "thumbs.db", "desktop.ini", "__macosx", ".ipynb_checkpoints", "timestamp.txt"}
IGNORED_SUFFIXES = (".txt", ".md", ".rst")
IGNORED_STEMS = ("readme", "license")
CANVAS = re.compile(r"^(?P<name>[^_/]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?$")
MAX_ZIP_BYTES = 2 * 1024**3
"""What a class zip may unpack to, in all."""
MAX_ZIP_FILES = 20_000
MAX_ENTRY_BYTES = 64 * 1024**2
"""What one entry may unpack to; a larger one is that student's rejected row (a submission is at most 20 MiB)."""
MAX_RATIO = 100
"""How much larger than the zip its contents may be, once they pass RATIO_FREE_BYTES (notebooks compress 3-20x)."""
RATIO_FREE_BYTES = 64 * 1024**2
_DRIVE = re.compile(r"^[A-Za-z]:")
MAX_STUDENT_BYTES = 128
"""The longest student id (UTF-8 bytes) kept as it is: every output file is named after it, within a filesystem's
255-byte limit; a longer one is cut and given a digest of the whole (`student_id`)."""


@dataclass(frozen=True)
class Entry:
    """One student's files, as the layout names them."""

    student: str
    """The student id the layout gives (file stem, folder name, or the platform's id)."""
    paths: tuple[Path, ...]
    """Their files (more than one is refused, without guessing which counts)."""
    name: str = ""
    """A display name the layout carries (Canvas, Moodle), else ""."""
    late: bool = False
    """Marked late by the platform (Canvas's `LATE`)."""
    refused: str = ""
    """Why this student's files are not read (a link, a device, an unsafe zip entry...), else ""."""
    submitted_at: str = ""
    """When the platform says it was submitted (ISO 8601, UTC), where the layout records it (nbgrader's
    `timestamp.txt`); else ""."""


@dataclass(frozen=True)
class Class:
    """Every student found, the layout, and what was ignored."""

    layout: str
    """One of LAYOUTS."""
    entries: tuple[Entry, ...]
    """One per student, sorted by student id."""
    ignored: tuple[str, ...] = field(default=())
    """Relative paths that are not submissions (listed once in the summary)."""
    unread: tuple[str, ...] = field(default=())
    """Relative paths that do not fit the layout (e.g. a folder inside a flat class), with why."""


def ignorable(name: str) -> bool:
    """A file or folder name that is never a submission."""
    low = name.lower()
    return (low in IGNORED_NAMES or name.startswith(".") or low.endswith(IGNORED_SUFFIXES)
            or low.split(".")[0] in IGNORED_STEMS)


def read(source: str | Path, unpack_to: Path) -> Class:
    """The class in a folder, or in a `.zip` unpacked (safely) into `unpack_to`."""
    source = Path(source)
    refused: list[tuple[str, str]] = []
    if source.suffix.lower() == ".zip" and _kind(source) == "file":
        source, refused = unzip(source, unpack_to)
    elif _kind(source) != "dir":
        raise GraderError(f"{source} is neither a folder nor a .zip of submissions (links are not followed)")
    return detect(source, refused)


def _kind(path: Path) -> str:
    """`dir`, `file`, or what else it is in words (a link is a link, never what it points to)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return "missing"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else files.kind_of(mode)


def student_id(raw: str) -> str:
    """The id a layout's name gives, as it is compared and used to name files: Unicode-normalised (NFC, so `josé`
    typed on a Mac and on Linux is one student) and, past MAX_STUDENT_BYTES, cut with a digest of the whole."""
    text = unicodedata.normalize("NFC", raw)
    if len(text.encode("utf-8")) <= MAX_STUDENT_BYTES:
        return text
    tag = hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=6).hexdigest()
    cut = text.encode("utf-8", "surrogateescape")[:MAX_STUDENT_BYTES - 13].decode("utf-8", "ignore")
    return f"{cut}~{tag}"


def unsafe_id(text: str) -> str:
    """Why a student id (as `student_id` gives it) cannot name a file, or "" when it can: it must be one path
    component that names nothing else (no separator, no control character, not `.`, `..` or a hidden name)."""
    if not text.strip():
        return "it is empty"
    if any(not ch.isprintable() for ch in text):
        return "it holds a control character"
    if "/" in text or "\\" in text:
        return "it holds a path separator"
    if text.startswith("."):
        return "it begins with a dot (`.`, `..` and hidden names are not ids)"
    return ""


def checked_id(raw: str, what: str) -> str:
    """An id from outside (an LTI launch, a roster, a token's owner, a platform's metadata) as a student id: the
    same normalisation and the same rule as a class zip's names, or one line saying why it cannot be one."""
    text = student_id(str(raw).strip())
    why = unsafe_id(text)
    if why:
        raise GraderError(f"{what} {printable(str(raw))[:60]!r} cannot be a student id: {why}")
    return text


def printable(text: str) -> str:
    """A name from an archive or a folder with its control characters made visible."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def entry_parts(name: str) -> tuple[tuple[str, ...], str]:
    """(path parts, "") for a zip entry name that stays inside its folder, else ((), why not).

    Both separators count (`\\` is how Windows tools write them); drive letters, absolute paths, `..`, NUL and
    control characters are refused.
    """
    if any(not ch.isprintable() for ch in name):
        return (), "a control character in its name"
    unified = name.replace("\\", "/")
    if _DRIVE.match(unified) or unified.startswith("/"):
        return (), "an absolute path"
    parts = tuple(part for part in unified.split("/") if part not in ("", "."))
    if not parts:
        return (), "an empty name"
    if ".." in parts:
        return (), "a '..' in its path"
    return parts, ""


def unzip(archive: Path, target: Path) -> tuple[Path, list[tuple[str, str]]]:
    """Unpack a class zip into `target`, entry by entry, streamed to disk; returns (the class folder, refused
    entries as (name, why)).

    The archive as a whole is refused (one line) past MAX_ZIP_FILES entries, MAX_ZIP_BYTES unpacked, or
    MAX_RATIO times its own size; one entry that would land outside `target`, is a link, is over
    MAX_ENTRY_BYTES, or clashes with a folder of the same name is refused alone, and becomes its student's
    rejected row.
    """
    refused: list[tuple[str, str]] = []
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [m for m in zipped.infolist() if not m.is_dir()]
            total = sum(m.file_size for m in members)
            if len(members) > MAX_ZIP_FILES or total > MAX_ZIP_BYTES:
                raise GraderError(f"{archive.name}: more than {MAX_ZIP_FILES} files or {MAX_ZIP_BYTES >> 30} GiB")
            packed = max(1, archive.stat().st_size)
            if total > RATIO_FREE_BYTES and total > MAX_RATIO * packed:
                raise GraderError(f"{archive.name}: unpacks to {total / packed:.0f} times its size "
                                  f"(more than {MAX_RATIO}x): not a class download")
            if target.exists():
                shutil.rmtree(target)
            files.make_dirs(target)
            written: set[tuple[str, ...]] = set()
            for member in members:
                parts = entry_parts(member.filename)[0]
                why = "a second entry of the same name in the zip; not unpacked" if parts and parts in written else \
                    _unpack(zipped, member, target)
                if why:
                    refused.append((member.filename, why))
                else:
                    written.add(parts)
    except zipfile.BadZipFile as err:
        raise GraderError(f"{archive.name} is not a readable zip ({err})") from err
    inner = [p for p in target.iterdir() if not ignorable(p.name)]
    if len(inner) == 1 and _kind(inner[0]) == "dir" and not MOODLE.match(inner[0].name) and _layout_of(inner[0]) != "per-student":
        prefix = inner[0].name + "/"
        return inner[0], [(n[len(prefix):] if n.replace("\\", "/").startswith(prefix) else n, why) for n, why in refused]
    return target, refused


def _unpack(zipped: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path) -> str:
    """Write one entry inside `target`; returns why it was not written, or ""."""
    parts, why = entry_parts(member.filename)
    if why:
        return f"{why}; not unpacked"
    path = target.joinpath(*parts)
    if os.path.commonpath([os.path.abspath(path), os.path.abspath(target)]) != os.path.abspath(target):
        return "outside the class folder; not unpacked"
    if (member.external_attr >> 16) & 0o170000 not in (0, 0o100000):
        return "a symbolic link or a special file in the zip; not unpacked"
    if member.file_size > MAX_ENTRY_BYTES:
        return f"{member.file_size >> 20} MiB unpacked, over the {MAX_ENTRY_BYTES >> 20} MiB a file may hold; not unpacked"
    if member.compress_size and member.file_size > RATIO_FREE_BYTES // 64 and member.file_size > 1000 * member.compress_size:
        return "compressed more than 1000 times (a zip bomb?); not unpacked"
    try:
        with zipped.open(member) as source:
            files.write_chunks(path, iter(lambda: source.read(1 << 20), b""), limit=MAX_ENTRY_BYTES)
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        return "a file and a folder of the same name in the zip; not unpacked"
    except (ValueError, zipfile.BadZipFile, NotImplementedError, EOFError) as err:
        return f"unreadable in the zip ({err}); not unpacked"
    except OSError as err:  # a name the filesystem will not take, a bad CRC...: this entry's student alone
        if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            raise GraderError(f"cannot unpack the class: {err.strerror} under {target}") from err
        return f"not written ({err.strerror or err}); not unpacked"
    return ""


def _kept(folder: Path) -> tuple[list[Path], list[Path]]:
    """(entries, ignored) directly in a folder, sorted."""
    kept: list[Path] = []
    ignored: list[Path] = []
    for path in sorted(folder.iterdir()):
        (ignored if ignorable(path.name) else kept).append(path)
    return kept, ignored


def files_under(folder: Path) -> list[Path]:
    """What a student handed in below `folder`: every entry that is not ignorable and not a folder, links and
    special files included (they are refused when read, never followed)."""
    return _files_under(folder, folder, [])


def _files_under(folder: Path, root: Path, ignored: list[str]) -> list[Path]:
    """Every file below `folder` that is not ignorable, links and other non-folders included (never followed),
    in sorted order; walked with a stack, so no depth of nesting exhausts the interpreter's recursion."""
    found: list[Path] = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            inside = sorted(current.iterdir())
        except OSError:
            found.append(current)  # a folder that cannot be listed: read (and refused) as what it is
            continue
        folders = []
        for path in inside:
            if path.name.lower() == "timestamp.txt":
                continue  # nbgrader's submission time: read for lateness (_stamped), never a submission
            if ignorable(path.name):
                ignored.append(str(path.relative_to(root)))
            elif _kind(path) == "dir":
                folders.append(path)
            else:
                found.append(path)
        stack += reversed(folders)
    return sorted(found)


def _layout_of(folder: Path) -> str:
    kept, _ = _kept(folder)
    dirs = [p for p in kept if _kind(p) == "dir"]
    plain = [p for p in kept if _kind(p) == "file"]  # links and special files do not decide the layout
    if _kind(folder / "submitted") == "dir" or folder.name == "submitted" and dirs and not plain:
        return "nbgrader"
    if dirs and sum(1 for d in dirs if MOODLE.match(d.name)) * 2 > len(dirs):
        return "moodle"
    if plain and sum(1 for p in plain if CANVAS.match(p.name)) * 2 > len(plain):
        return "canvas"
    if dirs and not plain:
        return "per-student"
    return "flat"


def detect(folder: Path, refused: list[tuple[str, str]] | tuple[()] = ()) -> Class:
    """Name the folder's layout and find each student's files in it.

    Nothing is followed: a link, a FIFO or a device where a submission (or a student's folder) should be makes
    that student a rejected row, as does an entry of `refused` (the zip entries `unzip` would not write).
    """
    layout = _layout_of(folder)
    kept, skipped = _kept(folder)
    ignored = [str(p.relative_to(folder)) for p in skipped]
    unread: list[str] = []
    entries: dict[str, Entry] = {}

    def add(student: str, path: Path, name: str = "", late: bool = False, why: str = "") -> None:
        student = student_id(student)
        kind = _kind(path)
        if not why and kind != "file":
            why = f"{printable(str(path.relative_to(folder)))} is {kind}, not a regular file; it is not read"
        old = entries.get(student) or Entry(student, ())
        entries[student] = Entry(student, old.paths + (path,), name or old.name, late or old.late,
                                 old.refused or why, old.submitted_at)

    for name, why in refused:
        student, display, late = _student_of(name, layout)
        add(student, folder / "(refused)", display, late, f"zip entry {printable(repr(name))}: {why}")
    if layout == "nbgrader":
        base = folder / "submitted" if _kind(folder / "submitted") == "dir" else folder
        for student_dir in sorted(p for p in base.iterdir() if not ignorable(p.name)):
            if _kind(student_dir) == "file":
                unread.append(f"{printable(student_dir.name)} (a file outside every student's folder)")
                continue
            for path in _files_under(student_dir, folder, ignored) if _kind(student_dir) == "dir" else [student_dir]:
                add(student_dir.name, path)
        _stamped(entries, base)
    elif layout == "moodle":
        for path in kept:
            match = MOODLE.match(path.name)
            if not match:
                unread.append(f"{printable(path.name)} (not a Moodle submission folder)")
                continue
            for inner in _files_under(path, folder, ignored) if _kind(path) == "dir" else [path]:
                add(match["id"], inner, name=match["name"])
    elif layout == "canvas":
        for path in kept:
            match = CANVAS.match(path.name)
            if not match:
                unread.append(f"{printable(path.name)} (not named <name>_<user id>_<submission id>_<file>)")
                continue
            add(match["user"], path, name=match["name"], late=bool(match["late"]))
    elif layout == "per-student":
        for student_dir in kept:
            for path in _files_under(student_dir, folder, ignored) if _kind(student_dir) == "dir" else [student_dir]:
                add(student_dir.name, path)
    else:
        for path in kept:
            if _kind(path) == "dir":
                inside = len(_files_under(path, folder, []))
                unread.append(f"{printable(path.name)}/ (a folder in a flat class, {inside} file(s) not read)")
                continue
            add(Path(path.name).stem, path)
    return Class(layout, tuple(entries[s] for s in sorted(entries)), tuple(sorted(set(ignored))), tuple(unread))


def _student_of(name: str, layout: str) -> tuple[str, str, bool]:
    """(student id, display name, late) that the layout gives a (refused) zip entry's name."""
    parts = [part for part in name.replace("\\", "/").split("/") if part not in ("", ".", "..")] or ["(unnamed)"]
    if layout == "nbgrader" and parts[0] == "submitted" and len(parts) > 1:
        return parts[1], "", False
    if layout == "moodle" and (match := MOODLE.match(parts[0])):
        return match["id"], match["name"], False
    if layout == "canvas" and (match := CANVAS.match(parts[-1])):
        return match["user"], match["name"], bool(match["late"])
    return printable((Path(parts[0]).stem if len(parts) == 1 else parts[0]) or parts[0]), "", False


def _stamped(entries: dict[str, Entry], base: Path) -> None:
    """nbgrader's submission times, on the entries of the students whose folders record one."""
    for student_dir in base.iterdir():
        key = student_id(student_dir.name)
        if key in entries and _kind(student_dir) == "dir":
            entries[key] = replace(entries[key], submitted_at=_timestamp(student_dir))


def _timestamp(student_dir: Path) -> str:
    """nbgrader's `<student>/<assignment>/timestamp.txt` ("2026-12-01 10:00:00.123456 UTC") as ISO 8601 in UTC;
    "" when there is none, or it is not a time (read without following links, a few bytes at most)."""
    import datetime as _dt

    for path in sorted(student_dir.glob("*/timestamp.txt")):
        try:
            text = files.read_regular(path, 200).decode("utf-8").strip().removesuffix(" UTC")
            when = _dt.datetime.fromisoformat(text)
        except (OSError, ValueError):
            continue
        return (when if when.tzinfo else when.replace(tzinfo=_dt.UTC)).astimezone(_dt.UTC).isoformat(timespec="seconds")
    return ""
