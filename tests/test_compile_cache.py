"""compile_cache: a lesson's JAX compilations are done once, into a folder every kernel may read and none may write."""

from __future__ import annotations

import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from grader.kernel import compile_cache
from grader.lesson import catalog, handout

LESSON = "inference-capacity"


@pytest.fixture
def tiny_lesson(tmp_path, monkeypatch):
    """The real lesson, with one small given cell and warm-up (a fill then takes about a second)."""
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))
    real = catalog.get(LESSON)
    monkeypatch.setattr(handout, "given_cells_in_order",
                        lambda lesson: ["import jax, jax.numpy as jnp\ndouble = jax.jit(lambda x: x * 2)"])
    yield lambda: replace(real, compile_warmup="double(jnp.ones(3)).block_until_ready()")


def test_a_fill_is_readable_by_everyone_and_made_once(tiny_lesson, monkeypatch):
    lesson = tiny_lesson()
    assert compile_cache.existing(lesson, "cpu") == ""
    folder = Path(compile_cache.ensure(lesson, "cpu"))
    entries = list(folder.iterdir())
    assert any(p.name.startswith("jit_") for p in entries)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert {stat.S_IMODE(p.stat().st_mode) for p in entries} == {0o644}
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no half-filled folder left beside it

    def no_second_fill(*args, **kwargs):
        raise AssertionError("filled again")

    monkeypatch.setattr(subprocess, "run", no_second_fill)
    assert compile_cache.ensure(lesson, "cpu") == str(folder) == compile_cache.existing(lesson, "cpu")


def test_a_failing_warm_up_leaves_no_cache_and_grading_simply_compiles(tiny_lesson):
    broken = replace(tiny_lesson(), compile_warmup="raise RuntimeError('the warm-up is broken')")
    assert compile_cache.ensure(broken, "cpu") == ""
    assert not any(Path(compile_cache.root()).iterdir())


def test_the_folder_changes_with_the_warm_up_and_the_device(tiny_lesson):
    first = compile_cache.folder_for(tiny_lesson(), "cpu")
    assert compile_cache.folder_for(tiny_lesson(), "gpu") != first  # another platform, another cache
    changed = replace(tiny_lesson(), compile_warmup="double(jnp.ones(4)).block_until_ready()")
    assert compile_cache.folder_for(changed, "cpu") != first


def test_a_lesson_without_warm_up_has_no_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    assert not catalog.get("inference-scaling").compile_warmup
    assert compile_cache.ensure(catalog.get("inference-scaling"), "cpu") == ""
    assert not (tmp_path / "compile").exists()
