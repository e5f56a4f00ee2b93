"""`grader verify`: check results and portfolios offline against the course's public key.

One line per file: `intact` (signed by the course key and unchanged, or a
file whose digest the signed result holds), `altered` (naming the field or
file), `unsigned`, `other key`, or `generated` (built without the key, such
as a portfolio's index; it is rebuilt from the signed results and must match
them to pass). Nothing here needs the private key, the reference or a kernel.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import portfolio, render, sign
from grader.errors import GraderError

PASSING = ("intact", "generated")


@dataclass(frozen=True)
class Line:
    """The verdict on one file."""

    name: str
    verdict: str
    detail: str = ""

    def text(self) -> str:
        return f"{self.name}: {self.verdict}" + (f" ({self.detail})" if self.detail else "")

    @property
    def ok(self) -> bool:
        return self.verdict in PASSING


def _result(name: str, data: Any, key: Any) -> Line:
    verdict, detail = sign.check(data, key)
    return Line(name, verdict, detail)


def _signed_file(name: str, body: bytes, data: dict[str, Any], field: str, rebuild: Any) -> Line:
    """A file whose digest the signed result holds, or which is rebuilt from that result."""
    digests = data.get("digests") if isinstance(data.get("digests"), dict) else {}
    if digests.get(field) and sign.digest(body) == digests[field]:
        return Line(name, "intact")
    try:
        rebuilt = rebuild(data) if rebuild else None
    except Exception:  # noqa: BLE001 - a result too damaged to rebuild from: the file cannot be vouched for
        rebuilt = None
    if rebuilt is not None and rebuilt.encode("utf-8") == body:
        return Line(name, "generated", "rebuilt from the signed result, and it matches")
    return Line(name, "altered", "its content differs from what the signed result records")


def file(path: Path, key_path: Path) -> list[Line]:
    """Verify a result JSON or a portfolio zip; one Line per file checked."""
    key = sign.public_key(key_path)
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise GraderError(f"{path.name}: not a readable result JSON ({err})") from None
        return [_result(path.name, data, key)]
    entries, members = portfolio.read(path)
    lines: list[Line] = []
    seen = set()
    for e in entries:
        result_line = _result(f"{e.folder}/result.json", e.data, key)
        lines.append(result_line)
        seen.add(f"{e.folder}/result.json")
        for leaf, field, rebuild in (("report.html", "report", render.report_html), ("report.md", "report_md", render.report_md),
                                     ("notebook.ipynb", "notebook", None)):
            name = f"{e.folder}/{leaf}"
            if name not in members:
                if leaf != "notebook.ipynb":
                    lines.append(Line(name, "altered", "missing from the portfolio"))
                continue
            seen.add(name)
            if not result_line.ok:
                lines.append(Line(name, "altered" if result_line.verdict == "altered" else result_line.verdict,
                                  "its result is not intact, so nothing vouches for it"))
            else:
                lines.append(_signed_file(name, members[name], e.data, field, rebuild))
    if "index.html" in members:
        seen.add("index.html")
        same = portfolio.index_html(entries).encode("utf-8") == members["index.html"]
        lines.append(Line("index.html", "generated", "built without the key; it shows what the signed results say")
                     if same else Line("index.html", "altered", "it does not show what the results say"))
    lines += [Line(name, "altered", "not part of what the grader wrote") for name in sorted(set(members) - seen)]
    return lines
