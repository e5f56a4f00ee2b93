"""files: atomic writes with an ordinary file's permissions, and reads that never follow a link."""

from __future__ import annotations

import os
import stat

import pytest

from grader.base import files


def test_a_write_replaces_the_file_whole_and_leaves_no_temporary_behind(tmp_path):
    target = tmp_path / "deep" / "er" / "report.html"
    files.write_text(target, "first")
    files.write_text(target, "second é")
    assert target.read_bytes() == "second é".encode()
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_modes_follow_the_umask_and_a_key_is_owner_only(tmp_path):
    old = os.umask(0o027)
    try:
        files.write_text(tmp_path / "a.txt", "x")
        files.write_text(tmp_path / "key.pem", "secret", private=True)
        folder = files.make_dirs(tmp_path / "made")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640   # 0666 less 027
    assert stat.S_IMODE((tmp_path / "key.pem").stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o750                 # 0777 less 027


def test_a_failed_write_leaves_the_old_file_as_it_was(tmp_path):
    target = tmp_path / "grades.csv"
    files.write_text(target, "kept")
    with pytest.raises(files.TooLarge):
        files.write_chunks(target, iter([b"12345", b"67890"]), limit=8)
    assert target.read_text() == "kept" and [p.name for p in tmp_path.iterdir()] == ["grades.csv"]
    files.write_chunks(target, iter([b"1234", b"5678"]), limit=8)  # exactly the limit is allowed
    assert target.read_bytes() == b"12345678"


def test_reading_refuses_a_link_a_fifo_and_a_folder(tmp_path):
    real = tmp_path / "real.ipynb"
    real.write_bytes(b"{}")
    (tmp_path / "link.ipynb").symlink_to(real)
    os.mkfifo(tmp_path / "pipe.ipynb")
    assert files.read_regular(real) == b"{}"
    for name, what in (("link.ipynb", "a symbolic link"), ("pipe.ipynb", "a FIFO"), ("", "a folder")):
        with pytest.raises(files.NotRegular) as caught:
            files.read_regular(tmp_path / name)
        assert caught.value.strerror == what


def test_a_read_stops_one_byte_past_its_limit(tmp_path):
    big = tmp_path / "big.py"
    big.write_bytes(b"x" * 100)
    assert len(files.read_regular(big, limit=10)) == 11  # one more than allowed: the caller can tell it is too big
    assert len(files.read_regular(big, limit=100)) == 100


def test_installing_a_folder_twice_keeps_the_first(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, text in ((first, "one"), (second, "two")):
        folder.mkdir()
        (folder / "cache.bin").write_text(text)
    target = tmp_path / "cache" / "lesson"
    files.install_folder(first, target)
    files.install_folder(second, target)
    assert (target / "cache.bin").read_text() == "one" and not second.exists()
    assert stat.S_IMODE((target / "cache.bin").stat().st_mode) == 0o644
