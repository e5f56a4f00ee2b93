"""Similarity: pairs of students whose written code (or explanations) match far more than chance, for review.

Only what a student wrote is compared. Their code cells are read as syntax
trees and tokenised from the trees' canonical form, with what disguises a
copy normalised away: every identifier is one token, every number and string
literal another; comments, spacing, line breaks, `;`, redundant parentheses,
docstrings and `pass` beside other statements leave no token. Each top-level
statement is fingerprinted on its own, so reordering functions changes
nothing. Fingerprints are winnowed k-grams of those tokens (MOSS's
scheme). The lesson's handout is removed by fingerprint, not by cell tags or
ids (which students lose or copy), and so is any fingerprint that most of the
class shares. Markdown cells beyond the handout's are compared the same way
over words, and reported apart.

A pair's score is the share of the smaller side's fingerprints that the
other side has too (0..1); pairs are found through a shared-fingerprint
index, never by comparing every pair. A pair above the threshold is flagged
for review, with its matching lines; nothing here says who copied whom, or
that anyone did.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import hashlib
import io
import keyword
import re
import tokenize
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from grader.base import syntax

if TYPE_CHECKING:
    from grader.classroom.batch_folder import BatchFolder

THRESHOLD = 0.6
"""Default flagging score. On the test class (tests/test_similarity.py) every disguised copy scored 1.0 and
every other pair (independently written correct solutions, untouched handouts) 0.0
(`python bench/similarity.py` prints both again): 0.6 leaves room for a copy with more of its own added."""
K, WINDOW = 10, 5
"""k-gram length (tokens) and winnowing window: a shared run of K + WINDOW - 1 tokens is always caught."""
WORDS_K, WORDS_WINDOW = 6, 4
"""The same for explanations, over words."""
MOST = 0.5
"""A fingerprint found in more than this share of the class (and in at least MOST_AT_LEAST students) is ignored."""
MOST_AT_LEAST = 4
MIN_FINGERPRINTS = 8
"""Fewer fingerprints than this (the handout, barely touched) are too little code to compare."""
MIN_WORD_FINGERPRINTS = 4
"""The same for explanations: a two-sentence paragraph gives about nine."""
SHOWN_BELOW = 50
"""Pairs below the threshold whose matching lines are kept (the best ones, for `--json` and the page)."""


@dataclass
class Written:
    """What one student wrote: code lines and their fingerprints (hash -> lines), and the same for prose."""

    student: str
    code: list[str] = field(default_factory=list)
    code_prints: dict[int, set[int]] = field(default_factory=dict)
    prose: list[str] = field(default_factory=list)
    prose_prints: dict[int, set[int]] = field(default_factory=dict)


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def winnow(tokens: list[tuple[str, int]], k: int, window: int) -> dict[int, set[int]]:
    """Fingerprints of a token stream: the smallest k-gram hash of every window (by position, rightmost on ties),
    each with the lines its k-gram spans. The hash is a stable one, so a class gives the same pairs and scores on
    every run (Python's own hash of a str changes with each process)."""
    words = [t for t, _ in tokens]
    grams = [(_stable("\x1f".join(words[i:i + k])), {tokens[i][1], tokens[i + k - 1][1]})
             for i in range(len(tokens) - k + 1)]
    chosen: dict[int, set[int]] = {}
    for start in range(max(1, len(grams) - window + 1)):
        span = grams[start:start + window]
        if not span:
            break
        value, lines = min(reversed(span), key=lambda gram: gram[0])
        chosen.setdefault(value, set()).update(lines)
    return chosen


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _inert(node: ast.stmt) -> bool:
    """A statement that cannot change behaviour: `pass`, or an expression that is a constant (a docstring, `...`)."""
    return isinstance(node, ast.Pass) or isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _header(node: ast.stmt) -> str:
    """A statement as canonical source, without its nested statements (they are tokenised on their own lines)."""
    shell = copy.copy(node)
    for name in ("body", "orelse", "finalbody"):
        if isinstance(getattr(node, name, None), list) and getattr(node, name):
            setattr(shell, name, [ast.Pass()])
    if isinstance(node, ast.Try | ast.TryStar) and isinstance(shell, ast.Try | ast.TryStar):
        shell.handlers = [ast.ExceptHandler(type=h.type, name=h.name, body=[ast.Pass()]) for h in node.handlers]
    if isinstance(node, ast.Match) and isinstance(shell, ast.Match):
        shell.cases = [ast.match_case(pattern=c.pattern, guard=c.guard, body=[ast.Pass()]) for c in node.cases]
    return ast.unparse(shell)


def _statements(body: list[Any]) -> list[tuple[str, int]]:
    """Normalised tokens of a body's statements, in order, each token on its statement's first line; what cannot
    change behaviour (`pass`, docstrings, `;`, parentheses, spacing, comments) leaves no token."""
    tokens: list[tuple[str, int]] = []
    for node in body:
        if isinstance(node, (ast.ExceptHandler, ast.match_case)):
            tokens += _statements(node.body)
            continue
        if _inert(node):
            continue
        tokens += [(token, node.lineno) for token in _normalised(_header(node)) if token != "pass"]
        for name in _BODIES:
            tokens += _statements(getattr(node, name, None) or [])
    return tokens


def _normalised(text: str) -> list[str]:
    """Tokens of source text: every identifier one token, every number and string another; keywords and
    operators as written."""
    out: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME:
            out.append(tok.string if keyword.iskeyword(tok.string) else "V")
        elif tok.type in (tokenize.NUMBER, tokenize.STRING):
            out.append("N" if tok.type == tokenize.NUMBER else "S")
        elif tok.type == tokenize.OP:
            out.append(tok.string)
    return out


def _code_tokens(source: str, offset: int) -> list[list[tuple[str, int]]]:
    """Normalised tokens of each top-level statement (lines numbered from `offset`), read from the canonical form
    of its syntax tree so that noise added to a copy changes nothing; text that does not parse is tokenised as
    written."""
    text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()) + "\n"
    try:
        tree = syntax.parse(text)
        return [[(token, line + offset) for token, line in _statements([node])] for node in tree.body
                if not _inert(node)]
    except (SyntaxError, ValueError, RecursionError, tokenize.TokenError):
        pass
    tokens: list[tuple[str, int]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = {tokenize.NAME: "V", tokenize.NUMBER: "N", tokenize.STRING: "S"}.get(tok.type)
            if tok.type == tokenize.NAME and keyword.iskeyword(tok.string) or tok.type == tokenize.OP:
                kind = tok.string
            if kind:
                tokens.append((kind, tok.start[0] + offset))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return [tokens]


def _words(text: str, offset: int) -> list[tuple[str, int]]:
    """Words of prose, every number one token: a handout of one's own numbers (variants) is still the handout."""
    return [("#" if word[0].isdigit() else word, number + offset) for number, line in enumerate(text.lower().splitlines())
            for word in re.findall(r"[a-z]+|[0-9][0-9.]*", line)]


def _add(into: dict[int, set[int]], found: dict[int, set[int]]) -> None:
    for value, lines in found.items():
        into.setdefault(value, set()).update(lines)


@functools.lru_cache(maxsize=4096)
def _cell_prints(source: str, code: bool) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """One cell's fingerprints with the cell's own line numbers; a class's notebooks repeat the handout's cells
    verbatim, so each distinct cell is fingerprinted once."""
    found: dict[int, set[int]] = {}
    if code:
        for block in _code_tokens(source, 0):
            _add(found, winnow(block, K, WINDOW))
    else:
        _add(found, winnow(_words(source, 0), WORDS_K, WORDS_WINDOW))
    return tuple((value, tuple(lines)) for value, lines in found.items())


def written(student: str, notebook: Any) -> Written:
    """A notebook's code and Markdown, fingerprinted (the handout is removed later, by fingerprint)."""
    mine = Written(student)
    for cell in notebook.cells:
        source, kind = str(cell.get("source", "")), cell.get("cell_type")
        if kind not in ("code", "markdown"):
            continue
        text, prints = (mine.code, mine.code_prints) if kind == "code" else (mine.prose, mine.prose_prints)
        offset = len(text)
        text += source.splitlines()
        for value, lines in _cell_prints(source, kind == "code"):
            prints.setdefault(value, set()).update(line + offset for line in lines)
    return mine


@dataclass(frozen=True)
class Pair:
    """Two students and how much of their written work matches."""

    students: tuple[str, str]
    score: float
    flagged: bool
    shared: int
    """Fingerprints the two share (after the handout and the class's common ones are removed)."""
    lines: tuple[tuple[int, ...], tuple[int, ...]]
    """Each side's lines that hold shared fingerprints (0-based, into its `code` or `prose`)."""

    def fragments(self, texts: tuple[list[str], list[str]]) -> list[dict[str, Any]]:
        """The matching runs of lines on each side, as text."""
        return [{"student": student, "lines": [first + 1, last + 1], "text": "\n".join(text[first:last + 1])}
                for student, lines, text in zip(self.students, self.lines, texts) for first, last in _runs(lines)]


def _runs(lines: tuple[int, ...]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for line in sorted(lines):
        if runs and line <= runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], line)
        else:
            runs.append((line, line))
    return runs


def compare(prints: dict[str, dict[int, set[int]]], given: set[int], threshold: float,
            least: int = MIN_FINGERPRINTS) -> list[Pair]:
    """Every pair that shares a fingerprint, scored, best first; `given` (the handout's) and the class's common
    fingerprints are left out first."""
    counts = Counter(value for found in prints.values() for value in found)
    common = {value for value, n in counts.items() if n > MOST * len(prints) and n >= MOST_AT_LEAST}
    kept = {student: {v: lines for v, lines in found.items() if v not in given and v not in common}
            for student, found in prints.items()}
    index: dict[int, list[str]] = defaultdict(list)
    for student in sorted(kept):
        for value in kept[student]:
            index[value].append(student)
    shared: Counter[tuple[str, str]] = Counter()
    for students in index.values():
        shared.update(combinations(students, 2))
    scored = []
    for (a, b), n in shared.items():
        smaller = min(len(kept[a]), len(kept[b]))
        scored.append((round(n / smaller, 4) if smaller >= least else 0.0, (a, b), n))
    scored.sort(key=lambda item: (-item[0], item[1]))
    pairs, shown = [], 0
    for score, (a, b), n in scored:
        flagged = score > threshold
        lines: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        if flagged or shown < SHOWN_BELOW:  # the lines are worked out only for the pairs anyone will see
            shown += not flagged
            both = kept[a].keys() & kept[b].keys()
            lines = (tuple(sorted({line for v in both for line in kept[a][v]})),
                     tuple(sorted({line for v in both for line in kept[b][v]})))
        pairs.append(Pair((a, b), score, flagged, n, lines))
    return pairs


@dataclass(frozen=True)
class Report:
    """A class's similarity: code pairs and explanation pairs, each best first."""

    threshold: float
    code: list[Pair]
    prose: list[Pair]
    students: dict[str, Written]
    foreign: list[tuple[str, str]] = field(default_factory=list)
    """(student, whose handout they handed in): another student's per-student handout, by its owner mark."""

    def as_json(self, unflagged: int = 50) -> dict[str, Any]:
        """`--json`'s form: every flagged pair, then the best `unflagged` others, per kind."""
        def listed(pairs: list[Pair], kind: str) -> list[dict[str, Any]]:
            chosen = [p for p in pairs if p.flagged] + [p for p in pairs if not p.flagged][:min(unflagged, SHOWN_BELOW)]
            return [{"students": list(p.students), "score": p.score, "flagged": p.flagged, "shared": p.shared,
                     "fragments": p.fragments(tuple(getattr(self.students[s], kind) for s in p.students))}
                    for p in chosen]
        return {"threshold": self.threshold, "pairs": listed(self.code, "code"),
                "explanations": listed(self.prose, "prose")}


    def summary(self) -> str:
        """One line for the terminal: how many were compared and which pairs are flagged for review."""
        flagged = [(p, name) for kind, name in ((self.code, "code"), (self.prose, "explanations")) for p in kind
                   if p.flagged]
        shown = ", ".join(f"{' & '.join(p.students)} ({name} {p.score})" for p, name in flagged[:10])
        foreign = "; ".join(f"{student} handed in {owner}'s handout" for student, owner in self.foreign[:10])
        return (f"{len(self.students)} notebooks compared; {len(flagged)} pair(s) flagged for review above "
                f"{self.threshold}" + (f": {shown}" if shown else "") + (" and more" if len(flagged) > 10 else "")
                + (f"; another student's handout: {foreign}" if foreign else ""))


def batch_lesson(out: BatchFolder) -> str:
    """The lesson of a batch's results (the first result that names one)."""
    from grader.base.errors import GraderError

    for _, result in out.read_all():
        if result.lesson:
            return result.lesson
    raise GraderError(f"{out.root}: no batch results name a lesson; pass --lesson")


def analyse(notebooks: dict[str, Any], handout: Any, threshold: float = THRESHOLD) -> Report:
    """The similarity of a class's notebooks (student -> notebook), the lesson's handout notebook removed."""
    students = {}
    for student, notebook in notebooks.items():
        try:
            students[student] = written(student, notebook)
        except Exception:
            continue
    given = written("", handout)
    return Report(threshold, compare({s: w.code_prints for s, w in students.items()}, set(given.code_prints), threshold),
                  compare({s: w.prose_prints for s, w in students.items()}, set(given.prose_prints), threshold,
                          MIN_WORD_FINGERPRINTS),
                  students)


def of_batch(out: BatchFolder, lesson: Any, threshold: float = THRESHOLD) -> Report:
    """The similarity of a batch's executed notebooks (`OUTDIR/notebooks/`), against its lesson's handout."""
    import nbformat

    from grader.base import files
    from grader.lesson import handout

    notebooks = {}
    for path in out.notebook_files():
        try:
            notebooks[path.stem] = nbformat.reads(files.read_regular(path, 64 * 2**20).decode("utf-8"), as_version=4)
        except (OSError, ValueError, UnicodeDecodeError):
            continue  # a notebook the batch did not write whole is left out
    return dataclasses.replace(analyse(notebooks, handout.scaffold(lesson), threshold), foreign=sorted(_foreign(out)))


def write(out: BatchFolder, lesson: Any, threshold: float = THRESHOLD, names: dict[str, str] | None = None) -> Report:
    """A batch folder's similarity.html written (each student as `Name (id)` where `names` gives one); its report."""
    from grader.base import files
    from grader.report import render_similarity

    found = of_batch(out, lesson, threshold)
    files.write_text(out.similarity, render_similarity.similarity_html(found, lesson, names))
    return found


def _foreign(out: BatchFolder) -> list[tuple[str, str]]:
    """(student, owner) for each result that records another student's handout (GradeResult.handout_of)."""
    return [(student, result.handout_of) for student, result in out.read_all() if isinstance(result.handout_of, str)]
