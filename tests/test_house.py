"""The house rules, read from the source with `ast`: short functions, small modules, public upstream hooks only.

Each rule is a function of a source text, so the tests below also show that a
planted breach is caught. Run `python tests/test_house.py` to list every breach.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "grader"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 200
UPSTREAM = ("nbclient", "jupyter_client")
ADAPTER = "upstream.py"
"""The one module allowed to override upstream's private names (its docstring says why)."""


def long_functions(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(f"{node.name} has {lines} lines")
    return found


def long_classes(source: str) -> list[str]:
    return [f"class {node.name} has {node.end_lineno - node.lineno + 1} lines" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES]


def module_too_long(source: str) -> str | None:
    lines = len(source.splitlines())
    return f"{lines} lines" if lines > MAX_MODULE_LINES else None


def upstream_private_uses(source: str) -> list[str]:
    """Classes deriving from an nbclient or jupyter_client class that define a `_name` (not dunder), and any
    `x._name` read or written on such an object, or imported from upstream."""
    tree = ast.parse(source)
    upstream_names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in UPSTREAM:
            upstream_names |= {alias.asname or alias.name for alias in node.names}
            found = [alias.name for alias in node.names if _private(alias.name)]
            if found:
                return [f"imports {', '.join(found)} from {node.module}"]
    modules = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in upstream_names for b in node.bases):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name) \
                        and _upstream_attr(item.name):
                    found.append(f"{node.name} overrides {item.name}")
        if isinstance(node, ast.Attribute) and _private(node.attr) and _upstream_attr(node.attr) \
                and not (isinstance(node.value, ast.Name) and node.value.id in modules):  # os._exit is not upstream's
            found.append(f"touches .{node.attr}")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


_UPSTREAM_PRIVATE: set[str] = set()


def _upstream_attr(name: str) -> bool:
    """Whether nbclient's or jupyter_client's own classes define this private name."""
    if not _UPSTREAM_PRIVATE:
        import jupyter_client
        import nbclient

        for package in (nbclient, jupyter_client):
            for path in Path(package.__file__).parent.rglob("*.py"):
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                        _UPSTREAM_PRIVATE.add(node.name)
                    elif isinstance(node, ast.Attribute) and _private(node.attr) and \
                            isinstance(node.value, ast.Name) and node.value.id == "self":
                        _UPSTREAM_PRIVATE.add(node.attr)
    return name in _UPSTREAM_PRIVATE


SPELLING = "base/spelling.py"
"""The one module that spells a score (and a value) for people."""
SCORE_WORDS = ("score", "points")


def score_spellings(source: str) -> list[str]:
    """An f-string that spells a score itself (a format spec, or a round() inside the braces) instead of asking
    grader.base.spelling: `{score:g}`, `{e.points:.4g}`, `{round(total, 2):g}`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FormattedValue):
            continue
        inner = ast.unparse(node.value)
        rounds = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "round"
                     for n in ast.walk(node.value))
        if (node.format_spec is not None or rounds) and any(word in inner.lower() for word in SCORE_WORDS):
            found.append(f"spells a score itself: {{{inner}{':' + ast.unparse(node.format_spec)[2:-1] if node.format_spec else ''}}}"
                         f" (line {node.lineno}; use grader.base.spelling.score)")
    return found


LAYOUT_OWNER = "classroom/batch_folder.py"
LAYOUT = ("results", "reports", "notebooks", "unpacked", "export", "gradebook.sqlite", "grades.csv", "changes.csv",
          "index.html", "similarity.html", "roster.csv", "course.json", "review.sqlite", "profile.json")
"""The batch folder's layout: spelt by its owner only."""


def layout_literals(source: str) -> list[str]:
    """A batch folder's part spelt outside its owner in a path: `out / "results"`, `Path(out) / "grades.csv"`.
    (Another layout's names, a portfolio's `index.html`, Gradescope's `results/`, are their owners' constants.)"""
    found = []
    for node in ast.walk(ast.parse(source)):
        parts = [node.left, node.right] if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) else []
        for part in parts:
            if isinstance(part, ast.Constant) and part.value in LAYOUT:
                found.append(f"spells the batch folder's {part.value!r} (line {part.lineno}; ask BatchFolder)")
    return sorted(set(found))


FILE_EDGE = {"result/record.py", "result/sign.py", "result/gradebook.py", "classroom/batch_folder.py",
             "result/regrade.py", "classroom/verify.py"}
"""Where a result's JSON is read and written: the record's serialiser pair, the signature (and what verifies it,
and a regrade's comparison of signed digests), the gradebook, the batch folder."""
NOT_RESULTS = {("intake/load.py", "_check_shape")}
"""A notebook's JSON."""
RESULT_NAMES = ("result", "data", "before", "after")


def dict_readers(source: str, where: str = "grader/x.py") -> list[str]:
    """A function outside the file edge that takes a result as a dict (`def f(data: dict[str, Any])`): readers take
    GradeResult, read from its JSON once, at the edge."""
    if where in FILE_EDGE:
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in ("from_dict", "from_wire") \
                and (where, node.name) not in NOT_RESULTS:
            found += [f"{node.name}({arg.arg}: {ast.unparse(arg.annotation)}) reads a result as a dict (take GradeResult)"
                      for arg in node.args.args + node.args.kwonlyargs
                      if arg.arg in RESULT_NAMES and arg.annotation is not None and "dict" in ast.unparse(arg.annotation)]
    return found


COURSE = PACKAGE.parent
LESSON_CODE = ("lessons", "solutions")
"""Where course staff's code lives: properties, scaffolds, references, hidden cases, mistakes."""
PUBLIC = {"grader", "grader.check"}
"""What a notebook or a lesson may import of the grader: the package and its in-notebook check."""


def internal_imports(source: str) -> list[str]:
    """Imports of the grader's internals (`from grader.run.wire import decode`) in a lesson's own code."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        if isinstance(node, ast.ImportFrom) and node.module == "grader":
            names = [f"grader.{alias.name}" for alias in node.names]
        found += [f"imports {name} (line {node.lineno}): a lesson is given decoded values and needs nothing internal"
                  for name in names if (name == "grader" or name.startswith("grader.")) and name not in PUBLIC]
    return found


MAX_IMPORTS = 20
"""No module imports more than this many of the package's modules: a hallway that knows every room is a room to split."""
IMPORT_LIMITS = {"grading.py": 18, "classroom/batch.py": 14, "service/dispatch.py": 12}
"""The spine, the batch and the service's grading loop stay short of the rooms they pass through (issue 60)."""
MAX_LESSON_CACHES = 2
"""Caches keyed by a lesson: the prepared lesson (grading.prepared) and the reference per student's numbers. Any
other piece of a lesson a grade needs is a field of the prepared lesson, not a side-effect filled for forks."""


def grader_imports(source: str, module: str) -> set[str]:
    """The package's modules (as paths under grader/) that a module's source imports, absolute or relative."""
    package = module.replace("/", ".").removesuffix(".py").rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = ("grader." + package if package else "grader").split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("grader."):
                path = name.removeprefix("grader.").replace(".", "/") + ".py"
                if (PACKAGE / path).is_file():
                    found.add(path)
    return found - {module}


def too_many_imports(source: str, module: str) -> str:
    limit = IMPORT_LIMITS.get(module, MAX_IMPORTS)
    count = len(grader_imports(source, module))
    return f"imports {count} of the package's modules (at most {limit})" if count > limit else ""


def lesson_caches(source: str) -> list[str]:
    """Functions cached (functools.cache, lru_cache) whose first parameter is a lesson."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef) or not node.args.args:
            continue
        cached = any("cache" in ast.unparse(d) for d in node.decorator_list)
        first = node.args.args[0].annotation
        if cached and first is not None and ast.unparse(first).split(".")[-1] == "Lesson":
            found.append(node.name)
    return found


TESTS = Path(__file__).resolve().parent
ROUND_NAME = re.compile(r"(^|_)round_?\d+($|_)")
"""A test file is named after the module or the concept it tests, never after the round of work that wrote it."""


def round_names(names: list[str]) -> list[str]:
    return [f"tests/{name}: named after a round of work, not what it tests" for name in names
            if ROUND_NAME.search(name.removesuffix(".py"))]


def breaches() -> list[str]:
    found = round_names(sorted(p.name for p in TESTS.glob("test_*.py")))
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(PACKAGE)
        found += [f"grader/{name}: {what}" for what in long_functions(source) + long_classes(source)]
        if module_too_long(source):
            found.append(f"grader/{name}: {module_too_long(source)}")
        if path.name != ADAPTER:
            found += [f"grader/{name}: {what}" for what in upstream_private_uses(source)]
        if str(name) != SPELLING:
            found += [f"grader/{name}: {what}" for what in score_spellings(source)]
        found += [f"grader/{name}: {what}" for what in dict_readers(source, str(name))]
        if str(name) != LAYOUT_OWNER:
            found += [f"grader/{name}: {what}" for what in layout_literals(source)]
    caches = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source, name = path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE))
        if too_many_imports(source, name):
            found.append(f"grader/{name}: {too_many_imports(source, name)}")
        caches += [f"grader/{name}:{function}" for function in lesson_caches(source)]
    if len(caches) > MAX_LESSON_CACHES:
        found.append(f"{len(caches)} caches keyed by a lesson (at most {MAX_LESSON_CACHES}): {', '.join(caches)}")
    for folder in LESSON_CODE:
        for path in sorted((COURSE / folder).rglob("*.py")):
            found += [f"{path.relative_to(COURSE)}: {what}" for what in internal_imports(path.read_text(encoding="utf-8"))]
    return found


def test_the_package_keeps_the_house_rules():
    assert breaches() == []


def test_a_test_file_named_after_a_round_is_caught():
    assert round_names(["test_walkthrough_round3.py", "test_red_team_round5.py", "test_judge.py",
                        "test_surround.py"]) == [
        "tests/test_walkthrough_round3.py: named after a round of work, not what it tests",
        "tests/test_red_team_round5.py: named after a round of work, not what it tests"]


def test_a_module_importing_too_many_rooms_is_caught():
    many = "\n".join(f"from grader.{m.parent.name} import {m.stem}" for m in sorted(PACKAGE.glob("*/*.py"))
                     if m.stem != "__init__")
    assert too_many_imports(many, "classroom/batch.py").startswith("imports ")
    assert too_many_imports("from grader.base import files\nfrom . import batch_folder\n", "classroom/batch.py") == ""
    assert grader_imports("from . import batch_folder\nfrom ..base import files\n", "classroom/batch.py") == {
        "classroom/batch_folder.py", "base/files.py"}


def test_a_cache_keyed_by_a_lesson_is_caught():
    assert lesson_caches("@functools.cache\ndef f(lesson: catalog.Lesson) -> int:\n    return 1\n") == ["f"]
    assert lesson_caches("@functools.lru_cache(maxsize=4)\ndef g(lesson: Lesson, n: int) -> int:\n    return n\n") == ["g"]
    assert lesson_caches("def f(lesson: catalog.Lesson) -> int:\n    return 1\n") == []
    assert lesson_caches("@functools.cache\ndef f(path: Path) -> int:\n    return 1\n") == []


def test_a_long_function_is_caught():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}\n") == [f"f has {MAX_FUNCTION_LINES + 1} lines"]
    assert long_functions("def f():\n    return 1\n") == []


def test_a_long_class_is_caught():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
    assert long_classes(f"class C:\n{body}\n") == [f"class C has {MAX_CLASS_LINES + 1} lines"]
    assert long_classes("class C:\n    x = 1\n") == []


def dict_fields(cls: type) -> list[str]:
    """A dataclass's fields whose type is a dict (or holds one: a tuple of dicts, a dict or None)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls)
            if any(arg is dict or typing.get_origin(arg) is dict for arg in _type_parts(hints[f.name]))]


def _type_parts(hint: object) -> list[object]:
    import typing

    return [hint] + [part for arg in typing.get_args(hint) for part in _type_parts(arg)]


def test_the_result_record_is_typed_but_for_the_one_open_mapping():
    """Each part of a result is a record of its own; only the host's environment stays a mapping."""
    from grader.result.record import GradeResult

    assert dict_fields(GradeResult) == ["environment"]

    @__import__("dataclasses").dataclass
    class Planted:
        run: dict[str, int]
        cells: tuple[dict[str, int], ...]
        maybe: dict[str, int] | None
        fine: tuple[int, ...]

    assert dict_fields(Planted) == ["run", "cells", "maybe"]


def test_a_second_way_of_spelling_a_score_is_caught():
    assert len(score_spellings('x = f"{score:.4g} of {exercise.points:g} points"\n')) == 2
    assert len(score_spellings('x = f"{round(data[\'score\'], 2)}"\n')) == 1
    assert score_spellings('x = f"{spelling.score(score)} in {seconds:.1f} s"\n') == []  # asked, and not a score


def test_a_lesson_module_importing_grader_internals_is_caught():
    assert internal_imports("from grader.run.wire import decode\nimport grader.lesson.cases as c\n") == [
        "imports grader.run.wire (line 1): a lesson is given decoded values and needs nothing internal",
        "imports grader.lesson.cases (line 2): a lesson is given decoded values and needs nothing internal"]
    assert internal_imports("from grader import spelling\n")[0].startswith("imports grader.spelling")
    assert internal_imports("import grader\nfrom grader import check\nimport numpy as np\nfrom . import x\n") == []


def test_a_batch_folders_layout_spelt_outside_its_owner_is_caught():
    assert layout_literals('p = out / "results" / f"{s}.json"\nq = Path(out) / "gradebook.sqlite"\n') == [
        "spells the batch folder's 'gradebook.sqlite' (line 2; ask BatchFolder)",
        "spells the batch folder's 'results' (line 1; ask BatchFolder)"]
    assert layout_literals('p = "grades.csv" / base\n') == ["spells the batch folder's 'grades.csv' (line 1; ask BatchFolder)"]
    assert layout_literals('data["results"] = []\np = folder.result(s)\n') == []  # a JSON key is not the layout


def test_a_reader_of_results_taking_a_dict_is_caught():
    planted = "def changes(before: dict[str, Any] | None, after: GradeResult) -> str:\n    return ''\n"
    assert dict_readers(planted, "watch.py") == [
        "changes(before: dict[str, Any] | None) reads a result as a dict (take GradeResult)"]
    assert dict_readers(planted, "result/record.py") == []  # the file edge itself
    assert dict_readers("def f(result: GradeResult, rows: dict[str, int]) -> None: ...\n", "watch.py") == []


def test_a_long_module_is_caught():
    assert module_too_long("x = 1\n" * (MAX_MODULE_LINES + 1)) == f"{MAX_MODULE_LINES + 1} lines"
    assert module_too_long("x = 1\n" * MAX_MODULE_LINES) is None


def test_a_private_upstream_override_is_caught():
    planted = ("from nbclient import NotebookClient\n"
               "class C(NotebookClient):\n"
               "    async def _check_raise_for_error(self, cell, index, reply):\n"
               "        pass\n"
               "    def on_cell(self):\n"
               "        self.km._kernel_spec = 1\n")
    assert upstream_private_uses(planted) == ["C overrides _check_raise_for_error", "touches ._kernel_spec"]
    assert upstream_private_uses("from grader.kernel.managers import SandboxKernelManager\n") == []
    assert upstream_private_uses("from jupyter_client.manager import _ShutdownStatus\n") == [
        "imports _ShutdownStatus from jupyter_client.manager"]
    public = ("import os\nfrom nbclient import NotebookClient\nclass C(NotebookClient):\n"
              "    def _mine(self):\n        self._own = 1\n        os._exit(0)\n")
    assert upstream_private_uses(public) == []  # a private name of our own is ours to keep


def test_the_cli_imports_no_kernel_machinery_until_a_command_runs_a_kernel():
    import subprocess

    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import grader.cli"], capture_output=True,
                          text=True, timeout=60)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert done.returncode == 0 and "grader" in imported
    assert not imported & {"jupyter_client", "nbclient", "zmq", "ipykernel"}, imported & {"jupyter_client", "nbclient"}


if __name__ == "__main__":
    print("\n".join(breaches()) or "no breaches")
    sys.exit(1 if breaches() else 0)
