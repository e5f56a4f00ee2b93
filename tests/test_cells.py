"""cells: what a cell did, in the student's words (worked out by hand)."""

from __future__ import annotations

import nbformat

from grader.run import cells


def _notebook(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def test_a_cell_is_named_by_its_first_line_of_code():
    nb = _notebook("# a comment\n\n  def simulate(arrivals):\n    pass", "# only a comment", "x" * 70)
    assert cells.cell_name(nb, 0) == 'the cell starting "def simulate(arrivals):"'
    assert cells.cell_name(nb, 1) == "cell 2"
    assert cells.cell_name(nb, 2) == f'the cell starting "{"x" * 60}..."'
    assert cells.cell_name(nb, 9) == "cell 10"  # no such cell: still a name, never an IndexError


def test_kernel_file_names_read_as_this_cell():
    text = 'File /tmp/ipykernel_7/2912668609.py:3, in f\nand 3141592653.py line 1; keep 1234.py'
    assert cells.readable(text) == "File this cell:3, in f\nand this cell line 1; keep 1234.py"


def test_limits_round_up_to_whole_seconds_and_never_to_zero():
    assert [cells.whole_seconds(s) for s in (0.0, 0.2, 1.0, 1.01, 29.5)] == [1, 1, 1, 2, 30]


def test_a_huge_error_is_cut_to_what_a_report_shows():
    content = {"ename": "E" * 1000, "evalue": "v" * 10**6, "traceback": ["line"] * 100}
    short = cells.short_error(content)
    assert len(short["ename"]) == 200 and len(short["evalue"]) == cells.ERROR_CHARS
    assert len(short["traceback"]) == 40


def test_colours_are_stripped_from_a_traceback():
    assert cells.plain_traceback(["\x1b[0;31mValueError\x1b[0m: bad", "next"]) == "ValueError: bad\nnext"


def test_only_stdout_streams_count_as_printed():
    cell = {"outputs": [{"output_type": "stream", "name": "stdout", "text": "a"},
                        {"output_type": "stream", "name": "stderr", "text": "b"},
                        {"output_type": "execute_result", "data": {"text/plain": "c"}},
                        {"output_type": "stream", "name": "stdout", "text": "d"}]}
    assert cells.stdout(cell) == "ad"
