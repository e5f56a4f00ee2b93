"""host.py: the machine's facts, each read from /proc in one place and checked against an independent source."""

from __future__ import annotations

import os

from grader.base import host


def test_total_memory_agrees_with_sysconf():
    expected = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")  # the kernel's totalram, another way
    assert abs(host.memory_bytes("MemTotal") - expected) <= 4096
    assert host.memory_bytes("NoSuchField") is None


def test_cpu_times_have_one_row_per_core_and_use_is_their_share():
    rows = host.cpu_times()
    assert len(rows) == os.cpu_count() and all(0 <= busy <= total for busy, total in rows)
    # a core busy for 50 of 100 jiffies, one idle for 40, one whose counters did not move
    assert host.cpu_use([[10, 100], [5, 50], [7, 7]], [[60, 200], [5, 90], [7, 7]]) == [0.5, 0.0, 0.0]


def test_absent_proc_files_read_as_nothing():
    assert host.proc_fields("no-such-file") == {}


def test_facts_name_the_installed_versions():
    from importlib import metadata

    facts = host.facts(host.Path("/nonexistent"))
    assert facts["numpy"] == metadata.version("numpy") and facts["grader_commit"] is None
    assert facts["cpu_count"] == os.cpu_count()


def test_this_process_umask_is_read_from_its_status():
    current = os.umask(0o027)  # set a distinctive one, then read it back through /proc
    try:
        assert int(host.proc_fields("self/status")["Umask"], 8) == 0o027
        from grader.base import files

        assert files.umask() == 0o027
    finally:
        os.umask(current)


def test_a_private_folder_is_this_users_and_nobody_elses_to_write(tmp_path):
    made = host.private_folder(tmp_path / "a" / "templates")
    assert made == tmp_path / "a" / "templates" and (made.stat().st_mode & 0o777) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could plant a compiled template here
    assert host.private_folder(shared) is None
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")  # a link where the folder should be is not that folder
    assert host.private_folder(tmp_path / "link") is None
    (tmp_path / "file").write_text("x")
    assert host.private_folder(tmp_path / "file") is None


def test_the_cache_root_is_grader_cache_else_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "g"))
    assert host.cache_root() == tmp_path / "g"
    monkeypatch.delenv("GRADER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert host.cache_root() == tmp_path / "x" / "grader"
