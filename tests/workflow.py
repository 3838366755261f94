"""Runs the steps of a GitHub Actions workflow's job here, as a runner would: the README's CI recipe, played out.

Only what the recipe uses is read: a job's ``steps``, each with ``uses`` or ``run`` (one line, or a ``|`` block),
``name``, ``with`` and ``if``. A ``run`` step runs in bash as Actions runs it (``bash --noprofile --norc -eo pipefail``)
with ``${{ github.event.pull_request.base.sha }}`` filled in; the job stops at the first step that fails. The
``uses`` steps are the caller's: the checkout is the pull request's repository made by :func:`pull_request`, Python
is the one running this, and a ``pip install`` step is skipped (quarto-arena is installed here already; the
install line itself is run by ``.ci/readme-recipe``). Used by tests/test_ci_recipe.py and benchmarks/ci_recipe.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "ci_recipe"
"""The example bot repository: the README's workflow and the C example bot."""
WORKFLOW = EXAMPLE / ".github" / "workflows" / "strength.yml"
BASE_SHA = "${{ github.event.pull_request.base.sha }}"


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a job."""

    name: str
    uses: str | None
    run: str | None


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one ``run`` step did."""

    step: Step
    status: int
    stdout: str
    stderr: str


@dataclass(frozen=True, slots=True)
class Job:
    """A job's run: its steps' results in order, up to the first that failed."""

    results: tuple[StepResult, ...]

    @property
    def status(self) -> int:
        """0 when the job passed, else the failing step's exit status."""
        return self.results[-1].status if self.results else 0

    @property
    def passed(self) -> bool:
        """The job's verdict: every step exited 0."""
        return self.status == 0


def steps(path: Path = WORKFLOW) -> list[Step]:
    """The steps of the workflow's job (its one job), in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "steps:")
    indent = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    found: list[dict[str, str]] = []
    block: tuple[str, int] | None = None  # the key of a "|" block being read, and its indentation
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        if block is not None:
            key, block_indent = block
            if not line.strip() or len(line) - len(line.lstrip()) >= block_indent:
                found[-1][key] += line[block_indent:] + "\n"
                continue
            block = None
        text = line.strip()
        if text.startswith("- "):
            found.append({})
            text = text[2:]
        m = re.fullmatch(r"([a-z-]+):\s*(.*)", text)
        if m is None:
            raise ValueError(f"{path}: cannot read {line!r}")
        key, value = m.groups()
        if value == "|":
            found[-1][key] = ""
            block = (key, indent + 4)
        else:
            found[-1][key] = value
    return [Step(s.get("name", s.get("uses", s.get("run", ""))), s.get("uses"), s.get("run")) for s in found]


def sprt_command(path: Path = WORKFLOW) -> list[str]:
    """The ``quarto-arena sprt ...`` command of the workflow, as words."""
    for step in steps(path):
        for line in (step.run or "").splitlines():
            words = line.split()
            if words[:2] == ["quarto-arena", "sprt"]:
                return words[: words.index("||")] if "||" in words else words
    raise ValueError(f"{path}: no quarto-arena sprt command")


def pull_request(
    directory: Path,
    change: Callable[[Path], None],
    message: str,
    base_change: Callable[[Path], None] | None = None,
) -> tuple[str, str]:
    """A git repository in ``directory`` holding the example repository (changed by ``base_change``, when given) as
    the base commit and ``change`` (called with the work tree) as the pull request's commit, checked out; returns
    the two commits."""
    directory.mkdir(parents=True)
    for entry in EXAMPLE.rglob("*"):
        if entry.is_file():
            target = directory / entry.relative_to(EXAMPLE)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(entry, target)  # the symbolic link bot.c becomes the file it points to

    def git(*args: str) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "ci",
            "GIT_AUTHOR_EMAIL": "ci@example.org",
            "GIT_COMMITTER_NAME": "ci",
            "GIT_COMMITTER_EMAIL": "ci@example.org",
        }
        done = subprocess.run(["git", *args], cwd=directory, env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    if base_change is not None:
        base_change(directory)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    base = git("rev-parse", "HEAD")
    change(directory)
    git("commit", "-q", "-a", "-m", message)
    return base, git("rev-parse", "HEAD")


def run_job(directory: Path, base: str, path: Path = WORKFLOW, env: dict[str, str] | None = None) -> Job:
    """Runs the job's ``run`` steps in the pull request's work tree ``directory``, up to the first that fails."""
    environment = dict(os.environ if env is None else env)
    environment.pop("VIRTUAL_ENV", None)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    results: list[StepResult] = []
    for step in steps(path):
        if step.run is None or step.run.startswith("pip install"):
            continue
        script = step.run.replace(BASE_SHA, base)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=directory,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        results.append(StepResult(step, done.returncode, done.stdout, done.stderr))
        if done.returncode != 0:
            break
    return Job(tuple(results))
