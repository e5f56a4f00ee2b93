"""The package reads in data-flow order: no step imports a later step."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "grader"
ORDER = ["host", "errors", "escape", "limits", "files", "shapes", "wire", "decoded", "load", "layouts", "roster", "lesson_schema", "lessons", "handout", "releases", "staff_code", "kernel_messages", "upstream", "isolation", "devices", "kernel_command", "leftovers", "sandbox", "options", "compile_cache", "zygote", "warm_start", "cells", "sections", "attempt", "run", "probe", "device_check", "matching", "expectations", "judge", "completion", "mistakes", "record", "sign", "seeds", "variants", "regrade", "evidence", "figure", "render", "render_similarity", "render_text",
         "similarity", "finish", "grading", "in_notebook", "watch", "validate", "new_lesson", "portfolio", "verify", "certs", "cluster", "batch", "platforms", "gradescope", "cli"]


def _imports(source: str) -> set[str]:
    """The grader modules a module's source imports, absolute (`grader.x`) or relative (`from . import x`)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = ("grader" + ("." + node.module if node.module else "")) if node.level else (node.module or "")
            if module == "grader":
                found |= {alias.name for alias in node.names}
            elif module.startswith("grader."):
                found.add(module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("grader.")}
    return found


def upward_imports(name: str, source: str) -> list[str]:
    """The later steps module `name` imports (none, in a package that reads in data-flow order)."""
    return [imported for imported in sorted(_imports(source)) if ORDER.index(imported) >= ORDER.index(name)]


def test_no_module_imports_a_later_step():
    for path in PACKAGE.glob("*.py"):
        name = path.stem
        if name.startswith("__") or name == "kernel_zygote":  # kernel_zygote runs on its own, importing nothing of ours
            continue
        assert name in ORDER, f"add {name} to ORDER"
        assert upward_imports(name, path.read_text()) == [], f"{name} imports a later step"


def test_a_planted_upward_import_is_caught_absolute_or_relative():
    record = (PACKAGE / "record.py").read_text()
    assert upward_imports("record", record) == []
    for planted in ("from . import cli\n", "from .cli import main\n", "from grader import cli\n", "import grader.cli\n",
                    "from .batch import run\n"):
        assert upward_imports("record", record + planted), planted
    assert upward_imports("record", record + "from . import errors\n") == []  # earlier steps are fine


def test_no_lesson_specific_names_in_the_package():
    for path in PACKAGE.glob("*.py"):
        text = path.read_text()
        for word in ("simulate_queue", "inference-capacity", "inference-scaling", "crossover", "sweep("):
            assert word not in text, f"{path.name} mentions {word}"


def test_the_package_holds_no_lesson_ids_exercise_ids_or_figures():
    import tomllib

    words = set()
    for spec_path in (PACKAGE.parent / "lessons").glob("*/lesson.toml"):
        spec = tomllib.loads(spec_path.read_text())
        words.add(spec["id"])
        words.update(ex["id"] for ex in spec["exercises"] if "-" in ex["id"])  # ids like `queue-hand-check`
        for ex in spec["exercises"]:
            words.update(n for n in ex.get("needs", []) if "_" in n)        # names like `simulate_queue`
    words |= {"463.87", "0.6783", "5.95", "jax.numpy", "import jax"}          # figures and warm imports
    for path in PACKAGE.glob("*.py"):
        text = path.read_text()
        for word in sorted(words):
            assert word not in text, f"{path.name} mentions {word}"
