"""`grader validate`: a lesson is sound when its reference earns full marks, its bare scaffold none, and every
figure the lesson states agrees with the reference."""

from __future__ import annotations

import copy
import dataclasses
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from grader.authoring import checks as authored, proof
from grader.base import spelling, syntax
from grader.base.errors import GraderError
from grader.grading import Options, grade
from grader.judge import expectations, matching
from grader.lesson import catalog, draw as drawing, handout, mistakes, staff_code
from grader.lesson.cases import AskReference, Stated
from grader.lesson.draw import Draw, Given
from grader.result import variants
from grader.result.record import GradeResult
from grader.run import decoded


@dataclass(frozen=True)
class Validation:
    """The outcome of `grader validate`."""

    lesson: str
    """Lesson id."""
    reference: GradeResult
    """Grade of the completed solution notebook (hidden cases included)."""
    scaffold: GradeResult
    """Grade of the bare student notebook."""
    problems: tuple[str, ...]
    """Everything that makes the lesson unsound; empty when it is sound."""
    proof: tuple[proof.Caught, ...] = ()
    """How often each declared mistake lost points on its exercise, over the seeds drawn."""


def validate(lesson_id: str, options: Options = Options(), workdir: str | Path | None = None,
             draws: int = len(authored.DRAWN), seeds: int = len(proof.SEEDS), given: Given = Given()) -> Validation:
    """Prove a lesson sound: the course staff's code loads, stated figures agree with the reference, the reference
    earns full marks and the bare scaffold zero points, the committed solution notebook is current, the reference
    answers every hidden case of `draws` draws as each case says it should, and every mistake the lesson declares
    loses points under each of `seeds` seeds."""
    lesson = catalog.get(lesson_id)
    problems = quick(lesson, tuple(range(1, draws + 1)))
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        solution = Path(tmp) / "reference.ipynb"
        nbformat.write(handout.solution_notebook(lesson), str(solution))
        scaffold_path = handout.release(lesson.id, tmp)
        ref, bare = (_graded(path, lesson.id, options, given) for path in (solution, scaffold_path))
    problems += reference_problems(ref)
    for e in bare.exercises:
        if e.status == "passed" or e.score > 0:
            problems.append(f"the bare scaffold {'passes' if e.status == 'passed' else 'earns points in'} {e.id} "
                            f"({spelling.score(e.score)} of {spelling.score(e.max_score)}): its checks cannot tell an "
                            "empty answer from a right one")
    problems += _variants(lesson, options, workdir)
    caught = tuple(proof.prove(lesson, options, tuple(range(proof.SEEDS[0], proof.SEEDS[0] + seeds)), workdir))
    problems += [c.line() for c in caught if c.caught < c.seeds]
    return Validation(lesson.id, ref, bare, tuple(problems), caught)


def _graded(path: Path, lesson_id: str, options: Options, given: Given | Draw) -> GradeResult:
    """A grade of the lesson's own notebook; a reference that cannot answer the lesson's cases is one line."""
    try:
        return grade(path, lesson_id, options, None, given)
    except RuntimeError as err:  # the judge asked the reference, and it raised: the lesson's fault, said as such
        raise GraderError(f"{err}: the reference in {catalog.get(lesson_id).solutions / 'answers.py'} cannot answer "
                          "the lesson's own case; fix it, then validate again") from None


def reference_problems(ref: GradeResult) -> list[str]:
    """The reference's exercises that did not pass, in the author's words: a check of the lesson's that raised on
    the reference's own answer is the check's fault (its file and line), never a student's."""
    problems = []
    for e in ref.exercises:
        if e.status == "passed":
            continue
        raised = next((m for m in e.messages if "could not be judged" in m and "in the lesson's check" in m), None)
        if raised:
            cause = raised.split("could not be judged (", 1)[1].rsplit(")", 1)[0]
            problems.append(f"{e.id}: the lesson's check raised on the reference's own answer ({cause}): the check "
                            "is at fault, not a student")
        else:
            problems.append(f"reference fails {e.id}: {'; '.join(e.messages[:2])}")
    return problems


def quick(lesson: catalog.Lesson, seeds: tuple[int, ...] = authored.DRAWN) -> list[str]:
    """What can be proven without a kernel (the suite asks it of every lesson it finds): the staff's code loads, the
    needed names are defined, the figures the lesson states agree with the reference, every hidden case of each
    of `seeds` is answered by the reference as it says, the properties run on the reference's answers, no varying
    number is typed into the text, the first choice of every variant is the given cell's, the hidden cases name
    the lesson's exercises, the declared mistakes load, and the solution notebook is current."""
    staff_code_loads(lesson)
    mistakes.declared(lesson)
    defined = syntax.defined_names(c.source for c in handout.solution_notebook(lesson).cells if c.cell_type == "code")
    problems = [f"exercise {ex.id} needs `{name}`, which neither the given cells nor the reference answers define "
                "(a typo in lesson.toml's needs?)" for ex in lesson.exercises for name in ex.needs if name not in defined]
    return (problems + stated_figures(lesson) + authored.hidden_figures(lesson, seeds) + authored.properties_run(lesson)
            + authored.typed_variants(lesson) + authored.variant_firsts(lesson) + authored.hidden_names(lesson)
            + authored.stale_solution(lesson))


def staff_code_loads(lesson: catalog.Lesson) -> None:
    """The course staff's code runs: the reference namespace builds, `hidden.py` draws, `properties.py` loads. Else
    one line (GraderError) naming the file, the line and what it raised, in an author's words."""
    folders = {f"<{lesson.id} given>": lesson.folder / "scaffold.py",
               f"<{lesson.id} reference>": lesson.solutions / "answers.py"}
    stubs = {c.get("id") for c in authored.lessons_scaffold_cells(lesson) if "answer" in c.metadata.get("tags", [])}
    missing = sorted(stubs - set(handout.answer_cells(lesson)))
    if missing:
        raise GraderError(f"{lesson.solutions / 'answers.py'}: no reference cell for the scaffold's answer cell "
                          f"{missing[0]!r}{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}: add "
                          f"`# %% id={missing[0]} tags=reference` with the reference answer")
    for step in (lambda: staff_code.reference(lesson), lambda: staff_code.hidden_cases(lesson, 1),
                 lambda: staff_code.properties(lesson)):
        try:
            step()
        except GraderError:
            raise
        except Exception as err:
            frames = [f for f in traceback.extract_tb(err.__traceback__)
                      if f.filename in folders or Path(f.filename).parent in (lesson.folder, lesson.solutions)]
            where = (f"{folders.get(frames[-1].filename, frames[-1].filename)}, line {frames[-1].lineno}" if frames
                     else str(lesson.solutions))
            hint = (" (a given cell the reference needs may lack the `reference` tag, or the name is misspelt)"
                    if isinstance(err, NameError) and frames and frames[-1].filename in folders else "")
            raise GraderError(f"{where}: {type(err).__name__}: {str(err)[:200]}{hint}") from None


def stated_figures(lesson: catalog.Lesson) -> list[str]:
    """Every figure the lesson states that its reference does not reproduce, in one line each (no kernel runs)."""
    problems = []
    reference = staff_code.reference(lesson)
    for ex in lesson.exercises:
        for case in ex.cases:
            if not isinstance(case.check, Stated):
                continue
            want = decoded.decode(case.check.value)
            try:
                got = expectations.expectation(dataclasses.replace(case, check=AskReference()), reference)
            except RuntimeError as err:  # the reference raised on the lesson's own input
                problems.append(f"{ex.id}: {err}")
                continue
            if not isinstance(got, expectations.Value):
                problems.append(f"{ex.id}: the reference gives no value for {case.label()} ({type(got).__name__})")
                continue
            mismatch = matching.compare(got.value, want, case)
            if mismatch:
                problems.append(f"{ex.id}: the reference disagrees with the lesson's figure for {case.label()}: "
                                f"{mismatch.public()}")
    return problems


def before_regrade(lesson: catalog.Lesson, recorded: dict[str, dict[str, Any]]) -> None:
    """Before a regrade moves any grade: a reference that changed since the recorded grades must still reproduce
    every figure the lesson states (else one line, GraderError, and nothing moves; `--force` regrades anyway)."""
    from grader.result import sign

    now = sign.lesson_digests(lesson)[1]
    before = {(data.get("digests") or {}).get("reference") for data in recorded.values()}
    problems = stated_figures(lesson) if before - {now, None} else []
    if problems:
        more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise GraderError(f"the reference changed and contradicts the lesson ({problems[0]}{more}): no grade moved. "
                          f"Fix the reference (grader validate {lesson.id}), or pass --force to regrade on it anyway")


VARIANT_DRAWS = 2
"""Students' numbers a lesson with [variants] is also validated on (drawn for made-up ids)."""


def _variants(lesson: catalog.Lesson, options: Options, workdir: str | Path | None) -> list[str]:
    """On a few drawn variants too: the reference's answer cells earn full marks, the bare handout nothing."""
    problems = []
    answers = handout.answer_cells(lesson) if lesson.variants else {}
    for draw in range(VARIANT_DRAWS if lesson.variants else 0):
        student = f"validate-{draw + 1}"
        own = drawing.decide(lesson, student, secret=None, per_student=True)  # their numbers, drawn without a secret
        numbers = own.own_numbers() or {}
        bare_book = variants.student_handout(lesson, student, None)
        filled = copy.deepcopy(bare_book)
        for cell in filled.cells:
            if cell.get("id") in answers:
                cell.source = answers[cell["id"]].source
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            nbformat.write(filled, str(Path(tmp) / "reference.ipynb"))
            nbformat.write(bare_book, str(Path(tmp) / "scaffold.ipynb"))
            ref, bare = (_graded(Path(tmp) / name, lesson.id, options, own) for name in ("reference.ipynb",
                                                                                         "scaffold.ipynb"))
        shown = variants.shown(numbers)
        problems += [f"reference fails {e.id} with the numbers {shown}: {'; '.join(e.messages[:2])}"
                     for e in ref.exercises if e.status != "passed"]
        problems += [f"the bare handout with the numbers {shown} passes {e.id}" for e in bare.exercises
                     if e.status == "passed"]
    return problems
