"""The package reads in data-flow order: no step imports a later step."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "grader"
ORDER = ["errors", "escape", "limits", "files", "shapes", "wire", "load", "layouts", "roster", "lessons", "sandbox", "options", "compile_cache", "zygote", "warm_start", "kernel_messages", "run", "probe", "device_check", "judge", "record", "sign", "figure", "render",
         "grading", "portfolio", "verify", "cluster", "batch", "platforms", "cli"]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "grader":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("grader."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("grader.")}
    return found


def test_no_module_imports_a_later_step():
    for path in PACKAGE.glob("*.py"):
        name = path.stem
        if name.startswith("__") or name == "kernel_zygote":  # kernel_zygote runs on its own, importing nothing of ours
            continue
        assert name in ORDER, f"add {name} to ORDER"
        for imported in _imports(path):
            assert ORDER.index(imported) < ORDER.index(name), f"{name} imports later step {imported}"


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
