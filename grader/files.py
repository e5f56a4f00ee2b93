"""Every file the grader writes for people: atomic, and with the permissions of an ordinary file.

A reader sees the old file or the new one, never half of one: each write goes
to a temporary file beside the target, is flushed to disk, then renamed over
it. Files get 0666 and folders 0777 less the umask (0644 and 0755 under the
usual 022), so reports copied to a web server stay readable; only a key is
owner-only (`private=True`). The sandbox's own run folders are not written
here: they belong to the kernel, not to a reader.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


def umask() -> int:
    """This process's umask, read without changing it (Linux), else by setting it back at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def make_dirs(path: str | Path) -> Path:
    """A folder and its parents, 0755 under the usual umask."""
    path = Path(path)
    path.mkdir(mode=0o777 & ~umask(), parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def replacing(path: str | Path, private: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path` with the right mode, else it vanishes."""
    path = Path(path)
    make_dirs(path.parent)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.chmod(tmp, 0o600 if private else 0o666 & ~umask())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(path: str | Path, data: bytes, private: bool = False) -> Path:
    """Write bytes atomically."""
    with replacing(path, private) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | Path, text: str, private: bool = False) -> Path:
    """Write UTF-8 text atomically."""
    return write_bytes(path, text.encode("utf-8"), private)


def install_folder(filled: str | Path, target: str | Path) -> Path:
    """Make a filled folder readable by everyone (0755 folders, 0644 files) and move it to `target` in one
    rename; if another process installed it first, theirs stays and `filled` is removed."""
    import shutil

    filled, target = Path(filled), Path(target)
    for folder, _, names in os.walk(filled):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o644)
    make_dirs(target.parent)
    try:
        os.rename(filled, target)
    except OSError:
        if not target.is_dir():
            raise
        shutil.rmtree(filled, ignore_errors=True)
    return target
