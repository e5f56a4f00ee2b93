"""Every file the grader writes for people: atomic, and with the permissions of an ordinary file.

A reader sees the old file or the new one, never half of one: each write goes
to a temporary file beside the target, is flushed to disk, then renamed over
it. Files get 0666 and folders 0777 less the umask (0644 and 0755 under the
usual 022), so reports copied to a web server stay readable; only a key is
owner-only (`private=True`). A device or a FIFO named as an output
(`--json /dev/null`, `/dev/stdout`) is written through, never replaced by a
file; a folder or a socket there is refused in one line. The sandbox's own run folders are not written
here: they belong to the kernel, not to a reader.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from grader.base import host
from grader.base.errors import GraderError


def umask() -> int:
    """This process's umask, read without changing it (Linux), else by setting it back at once."""
    try:
        return int(host.proc_fields("self/status")["Umask"], 8)
    except (KeyError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def make_dirs(path: str | Path) -> Path:
    """A folder and its parents, 0755 under the usual umask."""
    path = Path(path)
    path.mkdir(mode=0o777 & ~umask(), parents=True, exist_ok=True)
    return path


def trusted_dir(path: str | Path) -> Path:
    """A folder whose files others trust (a CA's): made 0755 whatever the umask, and an existing one no longer
    writable by its group or others (anyone who could write there could add what every machine trusts)."""
    path = Path(path).absolute()
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        folder.mkdir()
        folder.chmod(0o755)  # exactly, whatever the umask
    if path.stat().st_mode & 0o022:
        path.chmod(path.stat().st_mode & 0o755)
    return path


class NotWritable(GraderError):
    """An output path that is neither a file to replace nor a device or FIFO to write through (one line)."""


def _through(path: Path) -> tuple[Path, str]:
    """Where and how to write an output: ("replace", the file to replace atomically: `path`, or a link's target,
    the link kept), or ("through", `path`) for a device or FIFO (`/dev/null`, a pipe), or ("stream", `path`) for
    this process's own stream named by a descriptor link (`/dev/stdout`, `/proc/self/fd/1`), written where that
    stream stands. A folder, a socket or a block device is refused; nothing that is not a file is ever replaced."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:  # nothing there (or a dangling link): a new file
        return (Path(os.path.realpath(path)) if os.path.islink(path) else path), "replace"
    link = os.path.islink(path)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return path, "through"
    if not stat.S_ISREG(mode):
        raise NotWritable(f"{path} is {kind_of(mode)}: nothing was written there (name a file, or a device such "
                          "as /dev/stdout)")
    if not link:
        return path, "replace"
    if _descriptor(path) is not None:
        return path, "stream"  # this process's own open stream, never a file to put in its place
    return Path(os.path.realpath(path)), "replace"


def _descriptor(path: Path) -> int | None:
    """The descriptor a link such as /dev/stdout, /dev/fd/3 or /proc/self/fd/1 names, else None."""
    import re

    hops = [str(path.absolute())]
    with contextlib.suppress(OSError):
        hops.append(os.readlink(path))
    for hop in hops:
        found = re.fullmatch(rf"/(?:proc/(?:self|thread-self|{os.getpid()})/fd|dev/fd)/(\d+)", hop)
        if found:
            return int(found[1])
        if hop in ("/dev/stdout", "/dev/stderr"):
            return 1 if hop == "/dev/stdout" else 2
    return None


def _write_through(source: Path, target: Path, stream: bool = False) -> None:
    """Copy a finished temporary file into a device or a FIFO, or into this process's own open stream (`stream`:
    written where that stream stands, as the shell would), which stays what it is. A FIFO nobody reads is refused
    (a grader never waits on it)."""
    import errno
    import sys

    if stream:
        fd = _descriptor(target)
        assert fd is not None
        for opened in (sys.stdout, sys.stderr):
            opened.flush()
    else:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError as err:
            if err.errno == errno.ENXIO:
                raise NotWritable(f"{target} is a FIFO that nobody reads: nothing was written there") from None
            raise
        os.set_blocking(fd, True)
    try:
        with open(source, "rb") as data:
            while chunk := data.read(1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
    finally:
        if not stream:
            os.close(fd)


@contextlib.contextmanager
def replacing(path: str | Path, private: bool = False, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path` with the right mode, else it vanishes. An
    existing device, FIFO or descriptor link at `path` (`--json /dev/null`, `/dev/stdout`) is written through
    instead, and never replaced (see _through)."""
    target, how = _through(Path(path))
    if how == "replace":
        make_dirs(target.parent)
    # The temporary name never grows with the target's: a 250-byte file name is legal, and so must its write be.
    handle, name = tempfile.mkstemp(dir=target.parent if how == "replace" else None, prefix=f".{target.name[:32]}.",
                                    suffix=".tmp")
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        if how == "replace":
            with open(tmp, "rb") as written:
                os.fsync(written.fileno())
            os.chmod(tmp, mode if mode is not None else 0o600 if private else 0o666 & ~umask())
            target, how = _through(target)  # what is there now: a device put in its place is still never replaced
        if how == "replace":
            os.replace(tmp, target)
        else:
            _write_through(tmp, target, stream=how == "stream")
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(path: str | Path, data: bytes, private: bool = False, mode: int | None = None) -> Path:
    """Write bytes atomically (`mode`: exactly these permissions, whatever the umask)."""
    with replacing(path, private, mode) as tmp:
        tmp.write_bytes(data)
    return Path(path)


class TooLarge(OSError):
    """More bytes than a write was allowed."""


def write_chunks(path: str | Path, chunks: Iterator[bytes], limit: int | None = None) -> Path:
    """Write a stream of bytes atomically, never holding it whole; past `limit` bytes nothing is written
    (`TooLarge`). A folder where the file should be, or a file where a folder should be, raises as `mkdir` and
    `rename` do (FileExistsError, NotADirectoryError, IsADirectoryError)."""
    with replacing(path) as tmp, open(tmp, "wb") as out:
        written = 0
        for chunk in chunks:
            written += len(chunk)
            if limit is not None and written > limit:
                raise TooLarge(f"more than {limit} bytes")
            out.write(chunk)
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


# ---- one way in: files read on a student's behalf ----

class NotRegular(OSError):
    """A path that is a link, a device, a FIFO, a socket or a folder where a regular file was expected."""


def kind_of(mode: int) -> str:
    """What a file is, in words, from its `st_mode` (lstat's: a link is a link)."""
    import stat

    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISREG, "a regular file")):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file, opened without following a link in its last component and checked again
    after opening (a link, FIFO or device put in its place is never read); at most `limit` + 1 bytes.

    Raises `NotRegular` (naming what it is instead) or the OSError of the open.
    """
    import errno
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, "a symbolic link", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(errno.EINVAL, kind_of(info.st_mode), str(path))
        data = bytearray()
        while limit is None or len(data) <= limit:
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit + 1 - len(data)))
            if not chunk:
                break
            data += chunk
        return bytes(data)
    finally:
        os.close(fd)
