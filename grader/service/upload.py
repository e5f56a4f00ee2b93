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

import asyncio
import concurrent.futures as cf
import hashlib
import re
import threading
from dataclasses import dataclass
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

from grader.base import escape
from grader.base.errors import GraderError
from grader.intake import load
from grader.service import policy
from grader.service.jobs import Arrival, Queue, Receipt

if TYPE_CHECKING:
    from starlette.requests import Request

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


ENVELOPE = 64 * 1024
"""Bytes a multipart upload may carry beyond its file (boundaries, headers, a few small fields)."""
ARRIVAL_S = 120.0
"""The longest an upload may take to arrive (408 after it): a client sending a byte a minute holds nothing long."""


async def read(request: Request, cap: int, arrival_s: float = ARRIVAL_S) -> Upload:
    """The submitted file, counted as it arrives and refused (413) the moment it passes `cap` bytes, however it
    is sent (a Content-Length, chunked, multipart); nothing of a refused upload is kept."""
    length = request.headers.get("content-length")
    too_big = Refused(413, f"the file is over this lesson's limit of {cap // 1024} KiB: clear large outputs, save, "
                           "and submit again")
    kind = request.headers.get("content-type", "")
    multipart = kind.startswith("multipart/form-data")
    allowed = cap + ENVELOPE if multipart else cap
    if length is not None and length.isdigit() and int(length) > allowed:
        raise too_big
    raw = await _arrived(request, allowed, too_big, arrival_s)
    if multipart:
        body, name = await _file_field(request, raw, cap, too_big)
    else:
        body = raw
        name = safe_name(request.query_params.get("name", ""),
                         "submission.py" if "python" in kind else "submission.ipynb")
    if len(body) > cap:
        raise too_big
    if not body.strip():
        raise Refused(422, "the file is empty: save your work and submit again")
    body = escape.redact(body)  # a token typed into a cell is never kept (the receipt's digest is of what is)
    return Upload(name, body, hashlib.sha256(body).hexdigest())


async def _arrived(request: Request, allowed: int, too_big: Refused, arrival_s: float) -> bytes:
    """The request's body, no more than `allowed` bytes of it, within `arrival_s`."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(arrival_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > allowed:
                    raise too_big
                chunks.append(chunk)
    except TimeoutError:
        raise Refused(408, f"the upload took over {arrival_s:g} s to arrive: submit again on a steadier "
                           "connection") from None
    return b"".join(chunks)


async def _file_field(request: Request, raw: bytes, cap: int, too_big: Refused) -> tuple[bytes, str]:
    """The multipart body's `file` field, parsed from the bytes already counted (never from the network)."""
    from starlette.formparsers import MultiPartException
    from starlette.requests import Request

    given = [False]

    async def replay() -> dict[str, Any]:
        if given[0]:
            return {"type": "http.disconnect"}
        given[0] = True
        return {"type": "http.request", "body": raw, "more_body": False}

    try:
        async with Request(request.scope, replay).form(max_files=1, max_fields=8, max_part_size=cap) as form:
            field = form.get("file")
            if field is None or isinstance(field, str):
                raise Refused(422, "a multipart upload carries the file in a field named `file`")
            return await field.read(cap + 1), safe_name(field.filename or "")
    except MultiPartException as err:
        raise (too_big if "size" in str(err).lower() else Refused(422, f"the upload could not be read ({err})")) \
            from None


def check(upload: Upload, lesson_id: str) -> None:
    """Refuse (422) what the grader would reject when reading it, with the reader's own reason, and a handout of
    another lesson (its metadata says which), before it takes a place in the queue: read from memory (load.peek),
    never through a file."""
    try:
        hint = load.peek(upload.body, upload.name)
    except GraderError as err:
        raise Refused(422, str(err)) from None
    if hint and hint != lesson_id:
        raise Refused(422, f"{upload.name} is the notebook of lesson '{hint}', not '{lesson_id}': submit it to "
                           f"'{hint}', or start from the notebook of '{lesson_id}'")


class Intake:
    """One thread keeps every upload, in the order they arrived; what arrived together is kept in one transaction
    (one durable write for all of them), so in a burst no receipt waits on a lock another request holds, nor on a
    write of its own behind every other. Each is admitted (policy.decide) inside that transaction."""

    def __init__(self, queue: Queue, jobs: int, most: int = 64) -> None:
        self.queue, self.jobs, self.most = queue, jobs, most
        self.pending: SimpleQueue[tuple[Arrival, cf.Future[tuple[Receipt, policy.Admission]]]] = SimpleQueue()
        threading.Thread(target=self._run, name="grader-intake", daemon=True).start()

    def take(self, arrival: Arrival) -> cf.Future[tuple[Receipt, policy.Admission]]:
        """The arrival's receipt and admission, once it is kept (or the reason it could not be)."""
        future: cf.Future[tuple[Receipt, policy.Admission]] = cf.Future()
        self.pending.put((arrival, future))
        return future

    def _run(self) -> None:
        while True:
            batch = [self.pending.get()]
            while len(batch) < self.most and not self.pending.empty():
                batch.append(self.pending.get())
            self._keep(batch)

    def _keep(self, batch: list[tuple[Arrival, cf.Future[tuple[Receipt, policy.Admission]]]]) -> None:
        said: list[policy.Admission] = []

        def admit(arrival: Arrival, count: int, last: float | None) -> bool:
            said.append(policy.decide(arrival.lesson, count, last, arrival.received))
            return said[-1].graded

        try:
            receipts = self.queue.take([arrival for arrival, _ in batch], admit, self.jobs)
        except Exception as err:  # nothing of the batch was kept: each request says why
            for _, future in batch:
                future.set_exception(err)
            return
        for (_, future), receipt, admission in zip(batch, receipts, said):
            future.set_result((receipt, admission))
