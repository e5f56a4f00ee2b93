"""roster: a class list, plain or Canvas's gradebook export, read or refused in one line."""

from __future__ import annotations

import pytest

from grader.base.errors import GraderError
from grader.intake import roster

CANVAS = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Lab 3: scaling (77),Notes\n"
    "    Points Possible,,,,,10,\n"
    '"Lovelace, Ada",1001,S-1,ada,Sec A,,\n'
    '"Student, Test",9999,,,Sec A,,\n'
    '"Hopper, Grace",1002,S-2,grace,Sec B,,\n'
)


def test_a_canvas_export_gives_members_ids_sections_and_assignments(tmp_path):
    path = tmp_path / "gradebook.csv"
    path.write_text("\ufeff" + CANVAS)  # Canvas writes a byte-order mark
    read = roster.read(path)
    assert read.canvas and [m.student for m in read.members] == ["1001", "1002"]  # no points row, no test student
    assert read.members[0] == roster.Member("1001", "Lovelace, Ada", "S-1", "ada", "Sec A")
    assert read.assignments == (("Lab 3: scaling (77)", "77"),)
    assert read.find("grace").student == "1002" and read.find("S-1").student == "1001" and read.find("x") is None


@pytest.mark.parametrize("text, ids", [
    ("ada\nben\n\n", ["ada", "ben"]),                    # one id per line, blank lines skipped
    ("name,login\nAda,ada\nBen,ben\n", ["ada", "ben"]),  # a column named login
    ("Student_ID\n 7 \n", ["7"]),                        # headers in any case, ids stripped
])
def test_a_plain_class_list(tmp_path, text, ids):
    path = tmp_path / "class.csv"
    path.write_text(text)
    assert [m.student for m in roster.read(path).members] == ids


@pytest.mark.parametrize("content, reason", [
    (b"", "names no students"),
    (b'{"students": []}', "is not a CSV"),
    (b"ada\x00", "is not a CSV"),
    (b"\xff\xfe", "cannot read the roster"),
    (("x" * 2000 + "\n").encode(), "has a field over 1024 characters"),
])
def test_what_is_not_a_class_list_is_refused_in_one_line(tmp_path, content, reason):
    path = tmp_path / "roster.csv"
    path.write_bytes(content)
    with pytest.raises(GraderError, match=reason) as caught:
        roster.read(path)
    assert "\n" not in str(caught.value)


def test_a_link_is_not_followed(tmp_path):
    (tmp_path / "real.csv").write_text("ada\n")
    (tmp_path / "roster.csv").symlink_to(tmp_path / "real.csv")
    with pytest.raises(GraderError, match="cannot read the roster .*a symbolic link"):
        roster.read(tmp_path / "roster.csv")
