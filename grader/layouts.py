"""Step 1, load (a class): find each student's submission in the layout an LMS downloads.

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

import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader import files
from grader.errors import GraderError

LAYOUTS = ("flat", "per-student", "nbgrader", "canvas", "moodle")
EXPORTS = ("canvas", "prairielearn", "gradescope")
"""The platforms a batch's grades go back to (platforms.export), named here so the CLI lists them cheaply."""
IGNORED_NAMES = {".ds_store", "thumbs.db", "desktop.ini", "__macosx", ".ipynb_checkpoints", "timestamp.txt"}
IGNORED_SUFFIXES = (".txt", ".md", ".rst")
IGNORED_STEMS = ("readme", "license")
CANVAS = re.compile(r"^(?P<name>[^_/]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
MOODLE = re.compile(r"^(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?$")
MAX_ZIP_BYTES = 2 * 1024**3
MAX_ZIP_FILES = 20_000


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
    if source.is_file() and source.suffix.lower() == ".zip":
        source = unzip(source, unpack_to)
    elif not source.is_dir():
        raise GraderError(f"{source} is neither a folder nor a .zip of submissions")
    return detect(source)


def unzip(archive: Path, target: Path) -> Path:
    """Unpack a class zip: no absolute paths, no `..`, no links, bounded in size and count."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [m for m in zipped.infolist() if not m.is_dir()]
            if len(members) > MAX_ZIP_FILES or sum(m.file_size for m in members) > MAX_ZIP_BYTES:
                raise GraderError(f"{archive.name}: more than {MAX_ZIP_FILES} files or {MAX_ZIP_BYTES >> 30} GiB")
            if target.exists():
                shutil.rmtree(target)
            for member in members:
                parts = PurePosixPath(member.filename.replace("\\", "/")).parts
                if member.filename.startswith("/") or ".." in parts or not parts:
                    raise GraderError(f"{archive.name}: unsafe path {member.filename!r} in the zip")
                if (member.external_attr >> 16) & 0o170000 == 0o120000:
                    raise GraderError(f"{archive.name}: {member.filename!r} is a symbolic link")
                files.write_bytes(target.joinpath(*parts), zipped.read(member))
    except zipfile.BadZipFile as err:
        raise GraderError(f"{archive.name} is not a readable zip ({err})") from err
    files.make_dirs(target)
    inner = [p for p in target.iterdir() if not ignorable(p.name)]
    if len(inner) == 1 and inner[0].is_dir() and not MOODLE.match(inner[0].name) and _layout_of(inner[0]) != "per-student":
        return inner[0]  # a zip that wraps the class in one folder
    return target


def _kept(folder: Path) -> tuple[list[Path], list[Path]]:
    """(entries, ignored) directly in a folder, sorted."""
    kept, ignored = [], []
    for path in sorted(folder.iterdir()):
        (ignored if ignorable(path.name) else kept).append(path)
    return kept, ignored


def _files_under(folder: Path, root: Path, ignored: list[str]) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(ignorable(part) for part in rel.parts):
            if not any(ignorable(part) for part in rel.parts[:-1]):
                ignored.append(str(path.relative_to(root)))
            continue
        if path.is_file():
            found.append(path)
    return found


def _layout_of(folder: Path) -> str:
    kept, _ = _kept(folder)
    dirs = [p for p in kept if p.is_dir()]
    plain = [p for p in kept if p.is_file()]
    if (folder / "submitted").is_dir() or folder.name == "submitted" and dirs and not plain:
        return "nbgrader"
    if dirs and sum(1 for d in dirs if MOODLE.match(d.name)) * 2 > len(dirs):
        return "moodle"
    if plain and sum(1 for p in plain if CANVAS.match(p.name)) * 2 > len(plain):
        return "canvas"
    if dirs and not plain:
        return "per-student"
    return "flat"


def detect(folder: Path) -> Class:
    """Name the folder's layout and find each student's files in it."""
    layout = _layout_of(folder)
    kept, skipped = _kept(folder)
    ignored = [str(p.relative_to(folder)) for p in skipped]
    unread: list[str] = []
    entries: dict[str, Entry] = {}

    def add(student: str, path: Path, name: str = "", late: bool = False) -> None:
        old = entries.get(student)
        entries[student] = Entry(student, (old.paths if old else ()) + (path,), name or (old.name if old else ""),
                                 late or bool(old and old.late))

    if layout == "nbgrader":
        base = folder / "submitted" if (folder / "submitted").is_dir() else folder
        for student_dir in sorted(p for p in base.iterdir() if p.is_dir() and not ignorable(p.name)):
            for path in _files_under(student_dir, folder, ignored):
                add(student_dir.name, path)
    elif layout == "moodle":
        for path in kept:
            match = MOODLE.match(path.name) if path.is_dir() else None
            if not match:
                unread.append(f"{path.name} (not a Moodle submission folder)")
                continue
            for inner in _files_under(path, folder, ignored):
                add(match["id"], inner, name=match["name"])
    elif layout == "canvas":
        for path in kept:
            match = CANVAS.match(path.name) if path.is_file() else None
            if not match:
                unread.append(f"{path.name} (not named <name>_<user id>_<submission id>_<file>)")
                continue
            add(match["user"], path, name=match["name"], late=bool(match["late"]))
    elif layout == "per-student":
        for student_dir in kept:
            for path in _files_under(student_dir, folder, ignored):
                add(student_dir.name, path)
    else:
        for path in kept:
            if path.is_dir():
                inside = len(_files_under(path, folder, []))
                unread.append(f"{path.name}/ (a folder in a flat class, {inside} file(s) not read)")
                continue
            add(path.stem, path)
    return Class(layout, tuple(entries[s] for s in sorted(entries)), tuple(sorted(set(ignored))), tuple(unread))
