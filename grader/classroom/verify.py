"""`grader verify`: check results and portfolios offline against the course's public key.

One line per file: `intact` (signed by the course key and unchanged, or a
file whose digest the signed result holds), `altered` (naming the field or
file), `legacy` (signed before signatures covered RFC 8785 JSON), `unsigned`,
`other key`, `unverified` (a file whose result is not intact, so nothing
vouches for it), or `generated` (built without the key, such as a portfolio's
index; it is rebuilt from the signed results and must match them to pass).
Each result's line says whose it is (student, lesson, score, when graded), so
a renamed or swapped file is plain to see. JSON is parsed strictly: a key
given twice in one object is an alteration, never resolved.

A portfolio is one student's: its manifest lists every file with its digest,
the student and the lessons; a file not in it, one missing from it, a name
that occurs twice in the zip (or twice but for case), an entry the reader
would not read as named (a folder entry, a Unicode-path extra field, a `\\`
or control character), a result of another student, or a result outside the
folder of its own lesson makes it not intact: `verify` vouches only for what
it read. Nothing here needs the private key, the reference or a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import files, spelling
from grader.base.errors import GraderError
from grader.base.shapes import mapping
from grader.classroom import portfolio
from grader.intake import layouts
from grader.report import render
from grader.result import record, sign

PASSING = ("intact", "generated")
MAX_RESULT_BYTES = 64 * 1024**2


@dataclass(frozen=True)
class Line:
    """The verdict on one file."""

    name: str
    verdict: str
    detail: str = ""
    about: str = ""
    """Whose result it is, as the result says (student, lesson, score, when graded)."""

    def text(self) -> str:
        return (f"{self.name}: {self.verdict}" + (f" ({self.detail})" if self.detail else "")
                + (f" - {self.about}" if self.about else ""))

    @property
    def ok(self) -> bool:
        return self.verdict in PASSING


def whose(data: Any) -> str:
    """A result's student, lesson, score and time of grading, as it states them."""
    if not isinstance(data, dict):
        return ""
    score = (f"score {spelling.score(data.get('score'))}/{spelling.score(data.get('max_score'))}"
             if data.get("status") == "graded" else f"{data.get('status')}")
    arrived = mapping(data, "submitted_as")
    name = f" ({arrived['name']})" if isinstance(arrived.get("name"), str) and arrived.get("name") else ""
    return f"student {data.get('student')}{name}, lesson {data.get('lesson')}, {score}, graded {data.get('graded_at')}"


def _parse(name: str, body: bytes) -> tuple[Any, Line | None]:
    """(the parsed result, None), or (None, the line that says why it is not one)."""
    try:
        return sign.strict_loads(body.decode("utf-8")), None
    except sign.DuplicateKey as err:
        return None, Line(name, "altered", f"{err}: which one counts depends on the reader")
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        return None, Line(name, "altered", f"not readable JSON ({str(err)[:80]})")


def _result(name: str, data: Any, key: Any) -> Line:
    verdict, detail = sign.check(data, key)
    return Line(name, verdict, detail, whose(data))


def _redrawn(draw: Any) -> Any:
    """A report drawn again from the typed record of a signed result's JSON (read here, at the file edge)."""
    return lambda data: draw(record.read_result(data))


def _signed_file(name: str, body: bytes, data: dict[str, Any], field: str, rebuild: Any) -> Line:
    """A file whose digest the signed result holds, or which is rebuilt from that result."""
    digests = mapping(data, "digests")
    if digests.get(field) and sign.digest(body) == digests[field]:
        return Line(name, "intact")
    try:
        rebuilt = rebuild(data) if rebuild else None
    except Exception:
        rebuilt = None
    if rebuilt is not None and rebuilt.encode("utf-8") == body:
        return Line(name, "generated", "rebuilt from the signed result, and it matches")
    return Line(name, "altered", "its content differs from what the signed result records")


def file(path: Path, key_path: Path | None) -> list[Line]:
    """Verify a result JSON or a portfolio zip; one Line per file checked. Without a key, an unsigned file is told
    as unsigned and a signed one as `unverified` (nothing here can check it)."""
    key = sign.public_key(key_path) if key_path is not None else None
    if path.suffix.lower() == ".json":
        try:
            body = files.read_regular(path, MAX_RESULT_BYTES)
        except OSError as err:
            raise GraderError(f"{path.name}: not a readable result JSON ({err.strerror or err})") from None
        data, bad = _parse(path.name, body)
        if bad:
            return [bad]
        line = _result(path.name, data, key)
        if isinstance(data, dict) and path.stem not in (str(data.get("student")), "result"):
            line = Line(line.name, line.verdict, line.detail, f"{line.about}; the file's name is not the student's")
        return [line]
    return _portfolio(path, key)


def _portfolio(path: Path, key: Any) -> list[Line]:
    entries, members, untrusted = portfolio.read(path)
    lines = [Line(layouts.printable(name), "altered", why) for name, why in untrusted]
    listing, listing_line = _manifest(members, key)
    student = listing.get("student") if listing else None
    seen = {portfolio.MANIFEST}
    for e in entries:
        name = f"{e.folder}/result.json"
        seen.add(name)
        data, bad = _parse(name, members[name])
        result_line = bad or _result(name, data, key)
        if not bad and isinstance(data, dict) and (student is None or data.get("student") != student):
            result_line = Line(name, "altered", f"the result of student {data.get('student')!r}, in the portfolio "
                                                f"of {student!r}", result_line.about)
        elif not bad and isinstance(data, dict) and data.get("lesson") != e.folder:
            result_line = Line(name, "altered", f"a result of lesson {data.get('lesson')!r} in the folder of "
                                                f"{e.folder!r}: each lesson's result sits in its own folder",
                               result_line.about)
        lines.append(result_line)
        data = data if isinstance(data, dict) else {}
        digests = mapping(data, "digests")
        for leaf, field, rebuild in (("report.html", "report", _redrawn(render.report_html)),
                                     ("report.md", "report_md", _redrawn(render.report_md)), ("notebook.ipynb", "notebook", None)):
            name = f"{e.folder}/{leaf}"
            if name not in members:
                if leaf != "notebook.ipynb" or digests.get("notebook"):
                    lines.append(Line(name, "altered", "missing from the portfolio, though its result records it"))
                continue
            seen.add(name)
            if not result_line.ok:
                lines.append(Line(name, "unverified", f"its result.json is {result_line.verdict}, so nothing "
                                                      "vouches for this file"))
            else:
                lines.append(_signed_file(name, members[name], data, field, rebuild))
    if "index.html" in members:
        seen.add("index.html")
        same = portfolio.index_html(entries).encode("utf-8") == members["index.html"]
        lines.append(Line("index.html", "generated", "built without the key; it shows what the signed results say")
                     if same else Line("index.html", "altered", "it does not show what the results say"))
    lines += [Line(name, "altered", "not part of what the grader wrote") for name in sorted(set(members) - seen)]
    if listing:
        listed = mapping(listing, "files")
        lines += [Line(name, "altered", "listed in the manifest, missing from the portfolio")
                  for name in sorted(set(listed) - set(members))]
        changed = sorted(name for name in set(listed) & set(members) if listed[name] != sign.digest(members[name]))
        unlisted = sorted(set(members) - set(listed) - {portfolio.MANIFEST})
        lessons = sorted(e.folder for e in entries)
        if changed or unlisted or listing.get("lessons") != lessons:
            listing_line = Line(portfolio.MANIFEST, "altered",
                                "; ".join(([f"digests differ for {', '.join(changed)}"] if changed else [])
                                          + ([f"not listed: {', '.join(unlisted)}"] if unlisted else [])
                                          + (["its lessons differ"] if listing.get("lessons") != lessons else [])))
    return [listing_line] + lines


def _manifest(members: dict[str, bytes], key: Any) -> tuple[dict[str, Any] | None, Line]:
    """(the manifest, its line): signed by the course key (`intact`), or built without it and consistent
    (`generated`, decided once the files are checked against it)."""
    if portfolio.MANIFEST not in members:
        return None, Line(portfolio.MANIFEST, "altered", "missing: nothing binds these files to one student")
    data, bad = _parse(portfolio.MANIFEST, members[portfolio.MANIFEST])
    if bad:
        return None, bad
    if not isinstance(data, dict) or data.get("kind") != "portfolio-manifest":
        return None, Line(portfolio.MANIFEST, "altered", "not a portfolio manifest")
    verdict, detail = sign.check(data, key)
    about = f"student {data.get('student')}, lessons {', '.join(map(str, data.get('lessons') or []))}"
    if verdict == "unsigned":
        return data, Line(portfolio.MANIFEST, "generated", "built without the key; it matches the files", about)
    return data, Line(portfolio.MANIFEST, verdict, detail, about)
