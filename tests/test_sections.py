"""sections: which section a probe cell was in when its kernel stopped, by journal or by stdout."""

from __future__ import annotations

import os

from grader.run import sections

MARK = "@@m@@"


def _cell(keys=("a", "b", "c")):
    return sections.Sectioned(tuple(keys), lambda keep, journal: "", MARK, 5.0)


def _lines(*events):
    return "\n".join(MARK + event for event in events)


def test_progress_reads_begun_and_answered_sections():
    text = "noise\n" + _lines("begin:a", "answer:a:{\"x\": 1}", "begin:b") + "\n" + "begin:c"  # unmarked: ignored
    assert _cell().progress(text) == (["a", "b"], {"a"})


def test_the_journal_names_the_running_section_when_stdout_was_lost():
    journal = _lines("begin:a", "answer:a", "begin:b")
    assert sections.stopped_section(_cell(), ("a", "b", "c"), text="", journal=journal) == "b"


def test_stdout_decides_without_a_journal_and_else_the_first_unfinished():
    assert sections.stopped_section(_cell(), ("a", "b", "c"), _lines("begin:a", "answer:a:1", "begin:b"), "") == "b"
    assert sections.stopped_section(_cell(), ("a", "b", "c"), _lines("begin:a", "answer:a:1"), "") == "b"
    # a section already left out (not kept) is never named again
    assert sections.stopped_section(_cell(), ("c",), _lines("begin:b"), "") == "c"


def test_a_journal_replaced_by_a_fifo_or_link_is_not_read(tmp_path):
    real = tmp_path / "real"
    real.write_text(_lines("begin:a"))
    assert sections.read_journal(str(real)) == MARK + "begin:a"
    (tmp_path / "link").symlink_to(real)
    os.mkfifo(tmp_path / "fifo")
    assert sections.read_journal(str(tmp_path / "link")) == ""
    assert sections.read_journal(str(tmp_path / "fifo")) == ""
    assert sections.read_journal(str(tmp_path / "absent")) == ""


def test_only_the_journals_tail_is_read(tmp_path):
    path = tmp_path / "journal"
    path.write_text("x" * (sections.JOURNAL_BYTES + 10) + "\n" + MARK + "begin:z")
    tail = sections.read_journal(str(path))
    assert len(tail) == sections.JOURNAL_BYTES and tail.endswith(MARK + "begin:z")
