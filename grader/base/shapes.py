"""JSON shapes the grader refuses to read otherwise: checked fast, explained well.

Untrusted data (a submitted notebook, a kernel's answer) is checked against a
JSON Schema twice over when it is bad and once when it is good: the schema
compiled to plain Python by fastjsonschema passes good data about six times
faster than jsonschema; data it refuses is checked again by jsonschema, whose
best-matching error names the place and the reason (and which has the last
word: if it finds nothing, the data passes).
"""

from __future__ import annotations

from typing import Any


class Shape:
    """One JSON Schema, compiled on first use."""

    def __init__(self, schema: dict[str, Any], draft: str = "2020-12") -> None:
        self.schema = schema
        self.draft = draft
        self._fast: Any = None
        self._full: Any = None

    def warm(self) -> None:
        """Compile both checks now (a batch parent does this once, before it forks its workers)."""
        self._compiled()
        self._explainer()

    def _compiled(self) -> Any:
        import fastjsonschema

        if self._fast is None:
            self._fast = fastjsonschema.compile(self.schema)
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

        try:
            self._compiled()(data)
            return None
        except fastjsonschema.JsonSchemaException:
            import jsonschema

            return jsonschema.exceptions.best_match(self._explainer().iter_errors(data))


def mapping(data: Any, key: str) -> dict[str, Any]:
    """`data[key]` where data is a dict and that is a dict too; else an empty dict (untrusted JSON read safely)."""
    found = data.get(key) if isinstance(data, dict) else None
    return found if isinstance(found, dict) else {}
