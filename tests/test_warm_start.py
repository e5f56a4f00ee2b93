"""warm_start: a batch's template starts early only where the batch would fork kernels from it."""

from __future__ import annotations

import pytest

from grader.base.options import Options
from grader.kernel import warm_start, zygote


@pytest.mark.parametrize("options", [
    Options(zygote=False),                   # a single grade or a cluster batch: no template
    Options(zygote=True, device="gpu"),      # an accelerator's state does not survive a fork
    Options(zygote=True, sandbox="none"),    # templates fork only bubblewrap kernels
])
def test_no_template_where_no_kernel_would_be_forked(monkeypatch, options):
    started = []
    monkeypatch.setattr(zygote, "start_shared", lambda *args, **kwargs: started.append(args))
    assert warm_start.start("inference-capacity", options) is None and started == []


def test_an_unknown_lesson_starts_nothing_and_raises_nothing(monkeypatch):
    started = []
    monkeypatch.setattr(zygote, "start_shared", lambda *args, **kwargs: started.append(args))
    assert warm_start.start("no-such-lesson", Options(zygote=True, sandbox="none")) is None and started == []
