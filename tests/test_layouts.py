"""layouts: each LMS download layout gives the right student ids; names and links are never trusted."""

from __future__ import annotations

import zipfile

import pytest

from grader.base.errors import GraderError
from grader.intake import layouts


def _files(root, *names):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    return root


@pytest.mark.parametrize("names, layout, students", [
    (["ada.ipynb", "ben.py", "README.md"], "flat", ["ada", "ben"]),
    (["ada/work.ipynb", "ben/main.py"], "per-student", ["ada", "ben"]),
    (["submitted/ada/lab3/lab.ipynb", "submitted/ben/lab3/lab.ipynb"], "nbgrader", ["ada", "ben"]),
    (["lovelaceada_1001_5551_lab.ipynb", "hoppergrace_LATE_1002_5552_lab-1.ipynb"], "canvas", ["1001", "1002"]),
    (["Ada Lovelace_31_assignsubmission_file_/lab.ipynb"], "moodle", ["31"]),
])
def test_each_layout_is_detected_and_names_its_students(tmp_path, names, layout, students):
    found = layouts.read(_files(tmp_path / "class", *names), tmp_path / "unpacked")
    assert found.layout == layout and [e.student for e in found.entries] == students


def test_canvas_names_and_late_marks_travel_with_the_entry(tmp_path):
    found = layouts.read(_files(tmp_path / "c", "hoppergrace_LATE_1002_5552_lab.ipynb", "ada_1001_5551_lab.ipynb"),
                         tmp_path / "u")
    late = {e.student: (e.name, e.late) for e in found.entries}
    assert late == {"1001": ("ada", False), "1002": ("hoppergrace", True)}


def test_a_link_in_the_class_is_that_students_refusal_not_a_read(tmp_path):
    folder = _files(tmp_path / "class", "ada.ipynb")
    (tmp_path / "secret").write_text("not yours")
    (folder / "ben.ipynb").symlink_to(tmp_path / "secret")
    found = layouts.read(folder, tmp_path / "u")
    ben = next(e for e in found.entries if e.student == "ben")
    assert "symbolic link" in ben.refused


def test_a_zip_entry_that_climbs_out_is_refused_and_nothing_lands_outside(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("ada.ipynb", "{}")
        z.writestr("../../escaped.ipynb", "{}")
        z.writestr("/abs.ipynb", "{}")
    found = layouts.read(archive, tmp_path / "unpacked")
    assert "ada" in [e.student for e in found.entries]
    assert not (tmp_path / "escaped.ipynb").exists() and not list(tmp_path.parent.glob("escaped.ipynb"))
    assert any(e.refused for e in found.entries if e.student != "ada")


def test_neither_a_folder_nor_a_zip_is_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(GraderError, match="neither a folder nor a .zip"):
        layouts.read(tmp_path / "notes.txt", tmp_path / "u")


def test_printable_shows_control_characters_as_text():
    assert "\x1b" not in layouts.printable("ada\x1b[2J.ipynb")
