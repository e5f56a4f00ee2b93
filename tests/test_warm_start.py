"""warm_start: a batch's template starts early only where the batch would fork kernels from it."""

from __future__ import annotations

import pytest

from grader.base.options import Options
from grader.kernel import warm_start, zygote
from grader.lesson import catalog


@pytest.mark.parametrize("options", [
    Options(zygote=False),                   # a single grade or a cluster batch: no template
    Options(zygote=True, device="gpu"),      # an accelerator's state does not survive a fork
    Options(zygote=True, sandbox="none"),    # templates fork only bubblewrap kernels
])
def test_no_template_where_no_kernel_would_be_forked(monkeypatch, options):
    started = []
    monkeypatch.setattr(zygote, "start_shared", lambda *args, **kwargs: started.append(args))
    assert warm_start.start(catalog.get("inference-capacity"), options, 0) is None and started == []


def test_a_batch_of_an_unknown_lesson_is_one_line_before_any_template_starts(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from grader import cli

    started = []
    monkeypatch.setattr(zygote, "start_shared", lambda *args, **kwargs: started.append(args))
    done = CliRunner().invoke(cli.main, ["batch", str(tmp_path), "--lesson", "no-such-lesson", "--out", str(tmp_path / "o")])
    assert done.exit_code == 2 and "no-such-lesson" in done.output and len(done.output.strip().splitlines()) == 1
    assert started == [] and not (tmp_path / "o").exists()
