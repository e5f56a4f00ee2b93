"""An upload as the service takes it: capped in size while it arrives, named safely, checked as the grader reads it.

The file comes as the request's body (`?name=hw.py` names a script; a body
is a notebook otherwise) or as a multipart field `file`. Its name is the
student's and is made safe (letters, digits, `._-`, at most 100 characters,
ending .ipynb or .py). It is read no further than the lesson's `max_bytes`
(413), then checked by the very reader a grade uses (intake/load.py): a file
it would reject is refused now with the same one-line reason (422), so an
accepted submission always reaches a kernel.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError
from grader.intake import load

SUFFIXES = (".ipynb", ".py")


class Refused(GraderError):
    """An upload refused with an HTTP status and one line."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass(frozen=True)
class Upload:
    name: str
    body: bytes
    sha256: str


def safe_name(given: str, fallback: str = "submission.ipynb") -> str:
    """The student's file name, reduced to what is safe anywhere (a path, a shell, a page); its suffix kept."""
    base = re.split(r"[\\/]", given or "")[-1]
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".")[-100:]
    if not clean:
        return fallback
    if not clean.lower().endswith(SUFFIXES):
        raise Refused(422, f"{clean}: only a notebook (.ipynb) or a script (.py) is a submission")
    return clean


async def read(request: Any, cap: int) -> Upload:
    """The submitted file, read no further than `cap` bytes."""
    length = request.headers.get("content-length")
    too_big = Refused(413, f"the file is over this lesson's limit of {cap // 1024} KiB: clear large outputs, save, "
                           "and submit again")
    if length is not None and length.isdigit() and int(length) > cap + 64 * 1024:
        raise too_big
    kind = request.headers.get("content-type", "")
    if kind.startswith("multipart/form-data"):
        from starlette.formparsers import MultiPartException

        try:
            async with request.form(max_files=1, max_fields=8, max_part_size=cap) as form:  # its files closed after
                field = form.get("file")
                if field is None or isinstance(field, str):
                    raise Refused(422, "a multipart upload carries the file in a field named `file`")
                body = await field.read(cap + 1)
                name = safe_name(field.filename or "")
        except MultiPartException as err:
            raise (too_big if "size" in str(err).lower() else Refused(422, f"the upload could not be read ({err})")) \
                from None
    else:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise too_big
            chunks.append(chunk)
        body = b"".join(chunks)
        name = safe_name(request.query_params.get("name", ""),
                         "submission.py" if "python" in kind else "submission.ipynb")
    if len(body) > cap:
        raise too_big
    if not body.strip():
        raise Refused(422, "the file is empty: save your work and submit again")
    return Upload(name, body, hashlib.sha256(body).hexdigest())


def check(upload: Upload, lesson_id: str) -> None:
    """Refuse (422) what the grader would reject when reading it, with the reader's own reason, and a handout of
    another lesson (its metadata says which), before it takes a place in the queue."""
    with tempfile.TemporaryDirectory(prefix="grader-upload-") as folder:
        path = files.write_bytes(Path(folder) / upload.name, upload.body)
        try:
            hint = load.read(path).lesson_hint
        except GraderError as err:
            raise Refused(422, str(err)) from None
    if hint and hint != lesson_id:
        raise Refused(422, f"{upload.name} is the notebook of lesson '{hint}', not '{lesson_id}': submit it to "
                           f"'{hint}', or start from the notebook of '{lesson_id}'")
