"""The README's CI recipe ("A regression test in CI") on its example repository, tests/ci_recipe (the C example bot
and the README's workflow), its steps run here as a runner runs them (tests/workflow.py).

How often the recipe fails a no-op change, and how often it catches a real regression, are rates: a test that
asserted one run of a no-op change would itself fail that often. ``python benchmarks/ci_recipe.py`` measures them
(the README quotes it). Here: the README's workflow is the example's; its bounds put a no-op change on the passing
side; the statuses it passes are exactly those it names; and real pull requests whose effect is beyond doubt are
failed (a bot that stops taking its wins) and passed (the change that brings them back), with the exit status and
lines the workflow's log shows.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from workflow import EXAMPLE, WORKFLOW, pull_request, run_job, sprt_command, steps

ROOT = Path(__file__).resolve().parent.parent

#: The example bot's line that takes a winning placement, and the same line turned off: a bot that never takes a win
#: it is offered (it places elsewhere) loses most games against one that does.
TAKES_WINS = "if (p->cell[s] < 0 && wins_with(p, p->hand, s)) cand[n++] = s;"
IGNORES_WINS = "if (p->cell[s] < 0 && 0 && wins_with(p, p->hand, s)) cand[n++] = s;"


def _readme_workflow() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"```yaml\n(name: strength\n.*?)```", readme, re.DOTALL)
    assert m is not None, "the README lost its CI recipe"
    return m.group(1)


def test_the_readme_s_workflow_is_the_example_repository_s() -> None:
    assert _readme_workflow() == WORKFLOW.read_text(encoding="utf-8")
    # The example's bot is the C example bot (a link, so that the two cannot drift apart).
    assert (EXAMPLE / "bot.c").resolve() == ROOT / "engines" / "c" / "quarto_bot.c"
    assert TAKES_WINS in (EXAMPLE / "bot.c").read_text(encoding="utf-8")
    names = [s.name for s in steps()]
    assert "Build this change and its base" in names and any(n.startswith("SPRT") for n in names)


def test_the_bounds_put_a_no_op_change_on_the_passing_side() -> None:
    # fishtest's non-regression tests put 0 at (or just below) elo1; the recipe puts it above elo1, so that a change
    # that does nothing passes with more than 1 - beta (the rate is the benchmark's).
    words = sprt_command()
    elo0, elo1 = float(words[words.index("--elo0") + 1]), float(words[words.index("--elo1") + 1])
    assert elo0 < elo1 < 0.0
    assert "--model" not in words and "--beta" not in words  # normalized Elo, beta 0.05: as the README states
    assert int(words[words.index("--max-games") + 1]) > 0


@pytest.mark.parametrize(("status", "passes"), [(0, True), (4, True), (1, False), (2, False), (3, False), (70, False)])
def test_the_sprt_step_passes_exactly_the_statuses_it_names(tmp_path: Path, status: int, passes: bool) -> None:
    # The real command cannot be made to end in each status on demand: a stand-in quarto-arena on the PATH exits
    # with it, and records what it was asked.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "quarto-arena"
    stub.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\nexit {status}\n')
    stub.chmod(0o755)
    (step,) = [s for s in steps() if s.name.startswith("SPRT")]
    assert step.run is not None
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.run],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (tmp_path / "args").read_text().split() == sprt_command()[1:]
    assert done.returncode == (0 if passes else status), done.stderr
    if status == 4:
        assert done.stdout.startswith("::warning::")  # shown on the pull request, not buried in the log


@pytest.fixture
def cc() -> str:
    found = shutil.which("cc")
    if found is None:
        pytest.skip("no C compiler (cc)")
    return found


def test_a_pull_request_that_weakens_the_bot_fails_the_job(cc: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"

    def weaken(tree: Path) -> None:
        bot = tree / "bot.c"
        bot.write_text(bot.read_text(encoding="utf-8").replace(TAKES_WINS, IGNORES_WINS), encoding="utf-8")

    base, _ = pull_request(repo, weaken, "never take a win")
    job = run_job(repo, base)
    assert job.results[0].step.name == "Build this change and its base"
    assert job.status == 1, job.results[-1].stderr[-2000:]
    assert "H0 accepted: new fails" in job.results[-1].stdout
    assert (repo / "sprt" / "journal.qaj").is_file()  # the artifact the workflow uploads


def test_a_pull_request_that_strengthens_the_bot_passes_the_job(cc: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"

    def weaken(tree: Path) -> None:
        bot = tree / "bot.c"
        bot.write_text(bot.read_text(encoding="utf-8").replace(TAKES_WINS, IGNORES_WINS), encoding="utf-8")

    def restore(tree: Path) -> None:
        shutil.copyfile(EXAMPLE / "bot.c", tree / "bot.c")

    base, _ = pull_request(repo, restore, "take wins again", base_change=weaken)
    job = run_job(repo, base)
    assert job.passed, job.results[-1].stderr[-2000:]
    assert "H1 accepted: new passes" in job.results[-1].stdout
    assert "passed: no regression" in job.results[-1].stdout
