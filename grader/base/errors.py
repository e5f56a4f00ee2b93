"""The grader's own exceptions: each carries one line a person can act on.

Student code that misbehaves is never an exception here: it becomes a status
(`error`, `missing`, `timeout`) in the result. Bugs in the grader propagate.
"""

from __future__ import annotations


class GraderError(Exception):
    """Base class: `str(error)` is a single actionable line."""


class SubmissionRejected(GraderError):
    """The file cannot be graded (status `rejected`, exit code 2)."""


class LessonError(GraderError):
    """A lesson id is unknown or its files are inconsistent."""


class SandboxUnavailable(GraderError):
    """Isolation was required (`--require-sandbox`) but a layer is missing."""


class DeviceUnavailable(GraderError):
    """The accelerator asked for is absent or does not work in a sandboxed kernel, and no fallback was asked."""


class GradebookError(GraderError):
    """The gradebook file exists but cannot be read or written as one."""
