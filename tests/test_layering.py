"""The package reads in data-flow order: no step imports a later step."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grader

PACKAGE = Path(__file__).resolve().parent.parent / "grader"
ROOMS = list(grader.ROOMS)
"""The stages in data-flow order, as the package declares them once (grader.FLOW): a folder of `grader/` (load ->
run -> judge -> record -> render -> the class -> the service) or a module at its top (the spine `grading`, the
commands beside it, the door `cli`)."""
MAX_TOP = 12
MAX_FLOOR = 15


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (`grader.base.files`), without the package's own `__init__`s."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] != "__init__" and parts[-1] != "__main__":
            found[".".join(parts)] = path
    return found


def _imports(source: str, module: str = "grader.x") -> set[str]:
    """The grader modules (dotted) a module imports, absolute (`grader.base.files`) or relative (`from . import x`)."""
    found: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
                named = base + ("." + node.module if node.module else "")
            else:
                named = node.module or ""
            if named == "grader" or named.startswith("grader."):
                found |= {f"{named}.{alias.name}" for alias in node.names} | {named}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("grader.")}
    return {name for name in found if name != "grader" and room(name) in ROOMS}


def room(module: str) -> str:
    """A module's stage: its folder under grader/, or its own name at the top."""
    return module.split(".")[1]


def upward_imports(module: str, source: str) -> list[str]:
    """The later stages a module imports (none, in a package that reads in data-flow order)."""
    own = ROOMS.index(room(module))
    return sorted({room(name) for name in _imports(source, module) if ROOMS.index(room(name)) > own})


def test_no_module_imports_a_later_stage():
    for module, path in _modules().items():
        if module == "grader.kernel.zygote_process":  # it runs on its own, importing nothing of ours
            continue
        assert room(module) in ROOMS, f"add {room(module)} to ROOMS"
        assert upward_imports(module, path.read_text()) == [], f"{module} imports a later stage"


def test_no_circle_of_imports_inside_a_stage():
    modules = _modules()
    graph = {m: {i for i in _imports(p.read_text(), m) if i in modules and i != m and room(i) == room(m)}
             for m, p in modules.items()}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, "circle: " + " -> ".join(path[path.index(module):] + (module,))
        if module not in done:
            for imported in sorted(graph[module]):
                visit(imported, path + (module,))
            done.add(module)

    for module in sorted(graph):
        visit(module, ())
    assert len(done) == len(modules)


def test_the_tree_is_the_flow():
    """At most 12 modules at grader/'s top, every other one in a stage folder of at most 15."""
    modules = _modules()
    top = [m for m in modules if m.count(".") == 1]
    assert len(top) <= MAX_TOP, top
    floors = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert floors == set(ROOMS) - {room(m) for m in top}, floors
    for floor in floors:
        inside = [m for m in modules if room(m) == floor]
        assert len(inside) <= MAX_FLOOR, (floor, inside)
        assert (PACKAGE / floor / "__init__.py").read_text().startswith('"""'), f"{floor} says what it is"


def test_the_order_is_written_once_and_every_place_says_it():
    """grader.FLOW is the order; each folder's docstring says its stage number, the README's map lists the folders
    in that order, and the bench that walks a grade reads the same order."""
    folders = [stage for stage in grader.FLOW if (PACKAGE / stage / "__init__.py").is_file()]
    for stage in folders:
        said = re.match(r'"""Stage (\d+)', (PACKAGE / stage / "__init__.py").read_text())
        assert said and int(said.group(1)) == grader.FLOW.index(stage), f"{stage}/__init__.py: Stage {grader.FLOW.index(stage)}"
    readme = (PACKAGE.parent / "README.md").read_text().split("```\ngrader/\n", 1)[1].split("```", 1)[0]
    listed = re.findall(r"^  ([a-z_]+)/", readme, re.M)
    rooms = [room for room in grader.ROOMS if (PACKAGE / room / "__init__.py").is_file()]  # stages and beside them
    assert listed == [f for f in rooms if f in listed] and set(rooms) - set(listed) <= {"service"}, listed
    assert not re.search(r'^"""Step \d', "".join(p.read_text() for p in PACKAGE.rglob("*.py")), re.M)  # one numbering
    walk = (PACKAGE.parent / "bench" / "grade_walk.py").read_text()
    assert "grader.ROOMS" in walk or "FLOW" in walk


def test_a_planted_upward_import_is_caught_absolute_or_relative():
    module = "grader.result.record"
    record = (PACKAGE / "result" / "record.py").read_text()
    assert upward_imports(module, record) == []
    for planted in ("from grader import cli\n", "from grader.cli import main\n", "import grader.cli\n",
                    "from grader.classroom import batch\n", "from ..classroom.batch import run\n",
                    "from ..report import render\n"):
        assert upward_imports(module, record + planted), planted
    for earlier in ("from . import sign\n", "from grader.base import errors\n", "from ..judge import judge\n"):
        assert upward_imports(module, record + earlier) == [], earlier


def test_no_lesson_specific_names_in_the_package():
    for path in PACKAGE.rglob("*.py"):
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
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        for word in sorted(words):
            assert word not in text, f"{path.name} mentions {word}"


def test_the_readme_map_is_the_folder_tree():
    """The README's map of the code names every stage folder and, under it, every module the folder holds."""
    readme = (PACKAGE.parent / "README.md").read_text()
    block = readme.split("```\ngrader/\n", 1)[1].split("```", 1)[0]
    sections: dict[str, str] = {}
    current = "top"
    for line in block.splitlines():
        head = line[2:].split(" ", 1)[0] if line.startswith("  ") and not line.startswith("   ") else ""
        if head.endswith("/"):
            current = head[:-1]
        sections[current] = sections.get(current, "") + line + "\n"
    for module in _modules():
        parts = module.split(".")
        where = parts[1] if len(parts) >= 3 else "top"
        name = parts[-1] + (".py" if where == "top" else "")
        if len(parts) > 3:  # a folder within a stage (service/lti/): named as such, then its modules
            assert f"{parts[2]}/" in sections.get(where, ""), f"the README's map does not name {parts[2]}/ under {where}"
        assert name in sections.get(where, ""), f"the README's map does not name {module} under {where}"
