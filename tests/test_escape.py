"""escape: student text made safe for CSV, a shell, a terminal and Markdown (expected forms written by hand)."""

from __future__ import annotations

import csv
import io
import shlex

from grader.base import escape


def test_formula_cells_are_neutralised_and_numbers_kept():
    assert escape.csv_cell("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")"
    assert escape.csv_cell("  @SUM(A1)") == "'  @SUM(A1)"
    assert escape.csv_cell("-2.5") == "-2.5" and escape.csv_cell("+1e3") == "+1e3"  # plain numbers as text stay
    assert escape.csv_cell("-cmd|' /C calc'!A0") == "'-cmd\\|' /C calc'!A0"
    assert escape.csv_cell(3.0) == 3.0 and escape.csv_cell(None) is None
    assert escape.csv_cell("ada") == "ada"


def test_csv_text_reads_back_through_the_csv_module():
    text = escape.csv_text([["student", "note"], ["a,b", 'say "hi"\nthere'], ["=1+1", 2]])
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows == [["student", "note"], ["a,b", 'say "hi"\nthere'], ["'=1+1", "2"]]


def test_a_hostile_file_name_is_one_shell_word():
    line = escape.command(["grader", "grade", "x;$(touch PWNED);#.ipynb", "--seed", 7])
    assert shlex.split(line) == ["grader", "grade", "x;$(touch PWNED);#.ipynb", "--seed", "7"]


def test_terminal_control_characters_are_shown_not_obeyed():
    assert escape.terminal("red \x1b[31m bell \x07 c1 \x9b end\n\tnext") == "red \\x1b[31m bell \\x07 c1 \\x9b end\n\tnext"


def test_markdown_code_survives_its_own_backticks():
    assert escape.md_code("x") == "`x`"
    assert escape.md_code("a`b") == "`` a`b ``"
    assert escape.md_code("``") == "``` `` ```"


def test_markdown_text_is_shown_as_written():
    assert escape.md_text("names_with_underscores [1.0, 2.0]") == "names_with_underscores [1.0, 2.0]"
    assert escape.md_text("*bold* <b> a|b _x_") == "\\*bold\\* \\<b\\> a\\|b \\_x\\_"
    assert escape.md_text("# heading") == "\\# heading"
    assert escape.md_text("[link](http://x)") == "[link\\](http://x)"
    assert escape.md_text("two\nlines") == "two lines"


def test_formula_look_alikes_are_neutralised_like_their_ascii_forms():
    # fullwidth = + - @ (U+FF1D, U+FF0B, U+FF0D, U+FF20) and a no-break space before an ASCII formula
    for text in ("\uff1dHYPERLINK(\"http://x\")", "\uff0b1+1", "\uff0dcmd", "\uff20SUM(A1)", "\u00a0=1+1",
                 "\u3000\u00a0@SUM(A1)", "\u2212cmd|x"):
        assert escape.csv_cell(text).startswith("'"), text
    assert escape.csv_cell("\u00a0ada") == "\u00a0ada"  # a plain name behind a space is left alone
    assert escape.csv_cell("\tx") == "'\tx"  # tab is a start of its own, never skipped as space
