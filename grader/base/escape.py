"""One way out for text a student controls: made safe for the medium it goes to, here and nowhere else.

- CSV (`csv_text`): a cell that a spreadsheet would read as a formula (it
  begins with `=`, `+`, `-`, `@`, a tab or a carriage return, after any
  white space, or with their fullwidth and small look-alikes `＝ ＋ － ＠ ﹦ ﹢ ﹣`,
  which spreadsheets fold to ASCII) is prefixed with `'`, as OWASP's
  CSV-injection guidance says, and `|` is escaped; numbers stay numbers, and
  text that is a plain number (`-2.5`) stays as it is.
- Shell (`command`): every command shown to a person is `shlex.join`ed, so a
  file named `x;$(touch PWNED);#.ipynb` is one quoted word.
- Terminal (`terminal`): control characters (escape sequences, bells,
  backspaces; C0, DEL and C1) are shown as `\\x1b`-style text; newlines and
  tabs stay.
- HTML is escaped by the templates' autoescaping (render), Markdown code by
  `md_code`.
- A secret (`redact`): a token of the course's service typed into a file is
  replaced before the file is sent, stored or graded.
"""

from __future__ import annotations

import csv
import io
import re
import shlex
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "|", "%")
_LOOKALIKES = str.maketrans({"\uff1d": "=", "\uff0b": "+", "\uff0d": "-", "\uff20": "@", "\ufe66": "=",
                             "\ufe62": "+", "\ufe63": "-", "\u2212": "-", "\uff05": "%", "\uff5c": "|"})
"""Fullwidth, small and mathematical forms of the formula starts, which a spreadsheet may read as the ASCII ones."""
_LEADING_SPACE = re.compile(r"^[^\S\t\r]+|^[\u200b\ufeff]+")
"""White space a spreadsheet skips before a formula (any Unicode space, no-break included), but not tab or CR."""
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def csv_cell(value: Any) -> Any:
    """One cell, safe to open in a spreadsheet: numbers as they are, formula-like text neutralised."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    lead = _LEADING_SPACE.sub("", text.translate(_LOOKALIKES))
    if lead[:1] in FORMULA_STARTS and not _NUMBER.match(lead):
        return "'" + text.replace("|", "\\|")
    return text


def csv_uncell(text: str) -> str:
    """A cell read back from an export: what `csv_cell` neutralised is given back as it was written (a comment
    "-0.5: no units" exported as "'-0.5: no units" comes back without the quote); other text is kept as it is."""
    if text.startswith("'"):
        written = text[1:].replace("\\|", "|")
        if csv_cell(written) == text:
            return written
    return text


def csv_text(rows: Iterable[Iterable[Any]], lineterminator: str = "\r\n") -> str:
    """Rows as CSV text, every cell through `csv_cell`."""
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator=lineterminator).writerows([csv_cell(cell) for cell in row] for row in rows)
    return out.getvalue()


def terminal(text: Any) -> str:
    """Text for a terminal: control characters (except newline and tab) made visible, never obeyed."""
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], str(text))


def command(argv: Iterable[Any]) -> str:
    """A command line to show a person, each word quoted for a POSIX shell."""
    return shlex.join(str(word) for word in argv)


def md_code(text: str) -> str:
    """Inline Markdown code that a backtick in `text` cannot end early (CommonMark: a longer fence)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_MD_ALWAYS = re.compile(r"([\\`*<>&|~])")
"""Markup anywhere in a line: escapes, code, emphasis, inline HTML and autolinks, entities, table pipes, strikes."""
_MD_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
"""An underscore that could open or close emphasis (CommonMark never reads one inside a word as markup)."""
_MD_LINK = re.compile(r"\](?=[(\[:])")
"""A bracket that could end a link, an image, a reference or a reference definition."""


def md_text(value: Any) -> str:
    """Text for a Markdown page, shown as written: whatever CommonMark (and GitHub's tables and strikes) could
    read as markup is backslash-escaped, and line breaks are folded so a table row or list item stays one.
    Ordinary text (names_with_underscores, [1.0, 2.0], 3.5) is left as it reads."""
    text = " ".join(_CONTROL.sub(lambda m: ascii(m.group())[1:-1], str(value)).splitlines())
    text = _MD_LINK.sub(r"\\]", _MD_UNDERSCORE.sub(r"\\_", _MD_ALWAYS.sub(r"\\\1", text)))
    return "\\" + text if text[:1] in ("#", "-", "+", "=") else text


TOKEN_SHAPE = re.compile(rb"(?<![A-Za-z0-9_-])g[sil]_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")
"""What a token of the course's service looks like (a student's `gs_`, an instructor's `gi_`, an LMS session's
`gl_`, then 32 random bytes in URL-safe base64) inside a file."""
TOKEN_REMOVED = b"<token removed>"
_TOKEN_LIKE = re.compile(rb"g[sil]_[A-Za-z0-9_-]{43}")
"""The same without its edges: a search that starts from a literal is some thirty times faster on a notebook with no
token in it (nearly every one), which is then passed over whole."""


def redact(body: bytes) -> bytes:
    """A submitted file with every token in it replaced: a token typed into a cell (`grader.submit(token=...)`)
    is never sent, stored or graded."""
    return TOKEN_SHAPE.sub(TOKEN_REMOVED, body) if _TOKEN_LIKE.search(body) else body
