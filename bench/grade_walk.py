"""The walk of one `grader grade`: which rooms of the package it enters, in how many moves, how many of them back.

Traces one `grader grade` (a sample of inference-capacity, HTML and JSON report written) in this process with
`sys.setprofile`, keeping every call that crosses from one room of the package into another. A room is a
module, and a floor is a stage: a folder of `grader/` (base, intake, lesson, kernel, run, judge, result, report,
classroom) or the top (cli, grading). A move goes back up when it enters a room the walk has already left.
Usage: python bench/grade_walk.py [TREE] [--lookups] [--batch] (--batch: the parent of `grader batch` over the
inference-capacity samples instead of one grade; TREE: a checkout of the grader, default this one; for a flat tree the
stage of each module is read from FLOORS below, so both layouts are counted the same way).
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
from pathlib import Path

FLOORS = {
    "base": "host errors escape limits files shapes options",
    "intake": "load layouts roster",
    "lesson": "folders lesson_schema catalog handout releases staff_code",
    "kernel": "protocol upstream isolation devices launch leftovers sandbox compile_cache zygote "
              "zygote_process warm_start",
    "run": "wire decoded cells sections attempt tail execution probe device_check",
    "judge": "matching expectations verdict completion mistakes",
    "result": "record parts gradebook sign seeds variants regrade evidence",
    "report": "figure render render_similarity render_text finish",
    "classroom": "similarity portfolio verify certs cluster batch platforms gradescope",
}
STAGE = {module: floor for floor, names in FLOORS.items() for module in names.split()}
LESSON = "inference-capacity"
"""The lesson whose sample is graded (and whose lookups are told apart from the others')."""


BY_ID: list[str] = []
"""Each call of the grader's own functions that take a `lesson_id` (a lesson looked up by its id)."""
LOOKED_UP: list[str] = []
"""The id of each lesson looked up (catalog.get), in order."""


def walk(tree: Path) -> list[tuple[str, str, str]]:
    """Every call that crosses rooms, in order: (caller's room, callee's room, callee's name); a room: stage/module."""
    package = str(tree / "grader") + os.sep
    moves: list[tuple[str, str, str]] = []

    def room(filename: str) -> str | None:
        if not filename.startswith(package):
            return None
        inside = Path(filename).relative_to(package[:-1])
        module = inside.stem
        stage = inside.parts[0] if len(inside.parts) > 1 else STAGE.get(module, "top")  # a flat tree: FLOORS
        return f"{stage}/{module}"

    def profile(frame, event, arg):
        if event != "call":
            return
        here = room(frame.f_code.co_filename)
        code = frame.f_code
        if here and "lesson_id" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            BY_ID.append(f"{here}.{code.co_name}")
            if f"{here}.{code.co_name}" in ("lesson/catalog.get", "lesson/lessons.get"):
                LOOKED_UP.append(str(frame.f_locals.get("lesson_id")))
        caller = frame.f_back
        there = room(caller.f_code.co_filename) if caller is not None else None
        if here and there and here != there and here.split("/")[1] not in ("__init__", "__main__"):
            moves.append((there, here, frame.f_code.co_name))

    sys.path.insert(0, str(tree))
    from grader import cli

    with tempfile.TemporaryDirectory() as tmp:
        args = ["grade", str(tree / "samples" / LESSON / "ben.py"), "--lesson", LESSON,
                "--no-sandbox", "--json", f"{tmp}/r.json", "--html", f"{tmp}/r.html"]
        if "--batch" in sys.argv:  # the batch parent's walk (its workers are processes of their own)
            args = ["batch", str(tree / "samples" / LESSON), "--lesson", LESSON,
                    "--out", f"{tmp}/out", "--no-sandbox", "--jobs", "1"]
        sys.setprofile(profile)
        try:
            cli.main(args, standalone_mode=False)
        finally:
            sys.setprofile(None)
    return moves


def climbs(moves: list[tuple[str, str, str]], order: list[str]) -> tuple[int, list[str]]:
    """How often the spine (the top's modules calling into a stage) goes back to a stage it had already left:
    a spine that reads as the flow enters each stage once, in order."""
    path: list[str] = []
    for caller, callee, _ in moves:
        stage = callee.split("/")[0]
        if caller.split("/")[0] == "top" and stage != "top" and (not path or path[-1] != stage):
            path.append(stage)
    return sum(1 for i, stage in enumerate(path) if stage in path[:i]), path


def _order(tree: Path) -> list[str]:
    """The stages in the order the walked tree declares (grader.FLOW, its folders; the top in the spine's place),
    or, for an older tree that declares none, the order its folders had."""
    text = (tree / "grader" / "__init__.py").read_text()
    if "FLOW = (" in text:
        flow = ast.literal_eval(text.split("FLOW = ", 1)[1].split("\n", 1)[0])  # its own literal, read, not imported
        return [("top" if stage == "grading" else stage) for stage in flow]
    return ["base", "intake", "lesson", "kernel", "run", "judge", "result", "report", "top", "classroom"]


def main() -> None:
    given = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    tree = Path(given[0]).resolve() if given else Path(__file__).resolve().parent.parent
    moves = walk(tree)
    rooms = {callee for _, callee, _ in moves} | {caller for caller, _, _ in moves}
    edges = {(caller, callee) for caller, callee, _ in moves}
    floor_edges = {(a.split("/")[0], b.split("/")[0]) for a, b in edges if a.split("/")[0] != b.split("/")[0]}
    order = _order(tree)
    up = {(a, b) for a, b in floor_edges if order.index(b) > order.index(a)}
    if "--lookups" in sys.argv:
        import collections

        print(collections.Counter(BY_ID))
    print(f"modules entered {len(rooms)}; calls across modules {len(moves)}, {len(edges)} distinct module pairs")
    print(f"floors entered {len({r.split('/')[0] for r in rooms})}; {len(floor_edges)} distinct floor pairs, "
          f"{len(up)} of them calling a later stage: {sorted(up)}")
    import collections

    graded = collections.Counter(LOOKED_UP)
    own = graded.pop(LESSON, 0)
    others = ", ".join(f"{lesson_id} {n}" for lesson_id, n in sorted(graded.items())) or "none"
    print(f"calls of functions that take a lesson id: {len(BY_ID)} (of {len(set(BY_ID))} functions); "
          f"lessons looked up by id: {len(LOOKED_UP)}: the graded lesson {own} times, the others (which a notebook's "
          f"names are compared with) {others}")
    back, path = climbs(moves, order)
    print(f"climbs back: {back} (the spine's calls, in order, entering a stage it had already left: {' '.join(path)})")


if __name__ == "__main__":
    main()
