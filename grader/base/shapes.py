"""JSON shapes the grader refuses to read otherwise: checked fast, explained well.

Untrusted data (a submitted notebook, a kernel's answer) is checked against a
JSON Schema twice over when it is bad and once when it is good: the schema
compiled to plain Python by fastjsonschema passes good data about six times
faster than jsonschema; data it refuses is checked again by jsonschema, whose
best-matching error names the place and the reason (and which has the last
word: if it finds nothing, the data passes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NonFinite:
    """A number that is not finite (`nan`, `inf`), where a setting is read: shaped as jsonschema's errors are."""

    absolute_path: tuple[Any, ...]
    message: str = "is not a finite number (nan and inf are refused where a number is a setting)"
    validator: str = "finite"


def non_finite(data: Any, path: tuple[Any, ...] = ()) -> NonFinite | None:
    """The first number in the data that is not finite (JSON Schema's `minimum` lets nan through), or None."""
    if isinstance(data, float) and not math.isfinite(data):
        return NonFinite(path)
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    for key, value in items:
        found = non_finite(value, (*path, key))
        if found is not None:
            return found
    return None


class Shape:
    """One JSON Schema, compiled on first use; with `finite`, a number that is not finite is refused too."""

    def __init__(self, schema: dict[str, Any], draft: str = "2020-12", finite: bool = False) -> None:
        self.schema = schema
        self.draft = draft
        self.finite = finite
        self._fast: Any = None
        self._full: Any = None

    def warm(self) -> None:
        """Compile both checks now (a batch parent does this once, before it forks its workers)."""
        self._compiled()
        self._explainer()

    def _compiled(self) -> Any:
        if self._fast is None:
            self._fast = _fast_validator(self.schema)
        return self._fast

    def _explainer(self) -> Any:
        """jsonschema's validator, made (and jsonschema imported: a tenth of a second) only to explain a refusal."""
        import jsonschema

        if self._full is None:
            validator = jsonschema.Draft7Validator if self.draft == "7" else jsonschema.Draft202012Validator
            self._full = validator(self.schema)
        return self._full

    def first_error(self, data: Any) -> Any:
        """None when the data fits, else jsonschema's best-matching error."""
        import fastjsonschema

        if self.finite and (bad := non_finite(data)) is not None:
            return bad
        try:
            self._compiled()(data)
            return None
        except fastjsonschema.JsonSchemaException:
            import jsonschema

            return jsonschema.exceptions.best_match(self._explainer().iter_errors(data))


def _fast_validator(schema: dict[str, Any]) -> Any:
    """fastjsonschema's validator of `schema`. Generating and compiling its code takes 5-50 ms a schema (about 90 ms
    for those a batch, a grade or a check uses), so the compiled code is kept in the user's cache
    (`~/.cache/grader/shapes`, or `$GRADER_CACHE/shapes`), named by the schema, fastjsonschema's version and
    Python's; it is executed only from a folder of this user's that nobody else can write (host.private_folder)."""
    import hashlib
    import json
    import marshal
    import sys
    import types

    import fastjsonschema

    from grader.base import files, host

    if "$id" in schema:  # its entry point is named after the id: left to fastjsonschema itself
        return fastjsonschema.compile(schema)
    key = json.dumps([schema, fastjsonschema.VERSION, sys.version], sort_keys=True, default=repr)
    folder = host.private_folder(host.cache_root() / "shapes")
    kept = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.code" if folder else None
    code = None
    if kept is not None and kept.is_file():
        try:
            code = marshal.loads(files.read_regular(kept, 16 * 2**20))
        except (OSError, ValueError, EOFError, TypeError):
            code = None
    if not isinstance(code, types.CodeType):
        code = compile(fastjsonschema.compile_to_code(schema), "<fastjsonschema>", "exec")
        if kept is not None:
            try:
                files.write_bytes(kept, marshal.dumps(code), private=True)
            except OSError:
                pass
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    return namespace["validate"]


def mapping(data: Any, key: str) -> dict[str, Any]:
    """`data[key]` where data is a dict and that is a dict too; else an empty dict (untrusted JSON read safely)."""
    found = data.get(key) if isinstance(data, dict) else None
    return found if isinstance(found, dict) else {}
