"""Start a batch's kernel template (the zygote) for a lesson, as early as a command can.

The template takes about a second to import the lesson's libraries; the
grader's own imports and preparation take about half that again. `grader batch`
starts it first, so the two overlap; `workers.prepare` then finds it running
(same settings) and only waits for it. Nothing here is required: without a
template every grade starts its kernel by itself.
"""

from __future__ import annotations

from grader.base.errors import GraderError
from grader.base.options import Options
from grader.kernel import compile_cache, devices, launch, sandbox, zygote
from grader.lesson import catalog


def start(lesson: catalog.Lesson, options: Options, hash_seed: int) -> zygote.Zygote | None:
    """Start the lesson's template in the background (None where a batch would fork no kernels from one).

    The template starts before the sandbox's trial runs (sandbox.plan, about a
    tenth of a second of short sandboxes), which then overlaps its imports: it
    runs only the course's code, and is stopped again where the trial finds no
    working sandbox. A machine without the lesson's compilation cache fills it
    first, once, and only where the trial passed. The template's hash seed is
    `hash_seed`: decide it before calling.
    """
    if not options.zygote or options.device != "cpu":  # an accelerator's state does not survive a fork
        return None
    if options.sandbox == "none" or not launch.bwrap_path():
        return None
    device, template = "cpu", None
    try:
        cache = compile_cache.existing(lesson, device)
        if lesson.compile_warmup and not cache:
            if not _sandboxed(options):
                return None
            cache = compile_cache.ensure(lesson, device)
        template = zygote.start_shared(options.limits, devices.KernelStart(
            hash_seed, device, lesson.warm_imports, cache, _warm_sources(lesson)))
        if _sandboxed(options):
            return template
    except GraderError:  # each grade then says why
        pass
    if template is not None:
        template.stop()
    return None


def _sandboxed(options: Options) -> bool:
    """Whether grades here run in bubblewrap, the only sandbox a template serves (asked once per process)."""
    return sandbox.plan(options.limits, options.sandbox, options.require_sandbox).mode == "bwrap"


def _warm_sources(lesson: catalog.Lesson) -> tuple[str, ...]:
    """The lesson's warm cells (handout.warm_sources), reading the scaffold only for a lesson that has some: the
    notebook library it needs is a tenth of a second that a template without warm cells need not wait for."""
    if not lesson.warm_cells:
        return ()
    from grader.lesson import handout

    return handout.warm_sources(lesson)
