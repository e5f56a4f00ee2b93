"""Run a batch's per-submission task on an existing Dask distributed cluster.

Workers need only the project installed: each task carries the submission's
bytes and name, so no shared filesystem is assumed. Results come back as
`finish.Graded` records; the parent alone writes the gradebook.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterator

from grader import finish, grading
from grader.errors import GraderError


def grade_bytes(name: str, data: bytes, lesson_id: str, options: grading.Options,
                student: str | None = None) -> finish.Graded:
    """Worker side: write the submission to a private temp dir and grade it."""
    with tempfile.TemporaryDirectory(prefix="grader-task-") as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        return grading.grade_one(path, lesson_id, options, student)


def results(address: str, todo: list[tuple[Path, str]], lesson_id: str,
            options: grading.Options) -> Iterator[tuple[Path, finish.Graded]]:
    """Submit every submission to the scheduler at `address`; yield results as they finish."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise GraderError("--scheduler needs Dask: pip install '.[dask]'") from None
    try:
        client = Client(address, timeout=20)
    except (OSError, TimeoutError) as err:
        raise GraderError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    with client:
        futures = {client.submit(grade_bytes, path.name, path.read_bytes(), lesson_id, options, student, pure=False): path
                   for path, student in todo}
        for future in as_completed(futures):
            yield futures[future], future.result()
