"""Fixtures shared by the test files: the compiled C example bot; a test that needs an optional extra is skipped where
it is missing (``@pytest.mark.extra("dask")``); in CI, a skipped test is a failure. Hypothesis times no example
(its 200 ms deadline and its too-slow health check are timed assertions, which this project does not make in tests):
see HYPOTHESIS."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

HYPOTHESIS = "untimed"
"""The Hypothesis profile of every test: its defaults without the per-example deadline and without the health check
that fails a test whose examples are slow to generate. Either fails a property test whenever the machine is slow for
a moment (the deadline did in a quick loop at load 25: a pure function that took 0.01 ms took 313 ms once, and
Hypothesis reported a "flaky" failure); load has no place in what these tests assert."""
settings.register_profile(HYPOTHESIS, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(HYPOTHESIS)

C_SOURCE = Path(__file__).resolve().parent.parent / "engines" / "c" / "quarto_bot.c"


@pytest.fixture(scope="session")
def c_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The C example bot, compiled once per test run: a greedy engine that answers at once."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc)")
    exe = tmp_path_factory.mktemp("cbot") / "quarto_bot"
    subprocess.run([cc, "-O2", "-o", str(exe), str(C_SOURCE)], check=True)
    return exe


#: What each optional extra installs that its tests need: the module whose absence skips them.
EXTRAS = {"dask": "distributed", "web": "aiohttp", "browser": "playwright"}
WITHOUT = Path(__file__).resolve().parent / "without"
"""The folder whose sitecustomize.py hides extras from the processes started with it on PYTHONPATH."""


#: Words in a test's source that say it touches an extra (``--touching-extras``).
TOUCHES = {
    "dask": ("cluster", "dask", "distributed"),
    "web": ("--web", "aiohttp", "serve", "LiveServer", "PageServer", "web.server", "require_server"),
    "browser": ("playwright", "browser", "chromium", "firefox"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--without",
        metavar="EXTRA[,EXTRA]",
        default="",
        help="run as if these extras (dask, web, browser) were not installed, in this process and every one it starts",
    )
    parser.addoption(
        "--touching-extras",
        action="store_true",
        help="with --without: only the tests whose source names the hidden extras (cluster, --web, browser...)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """``--without``: the extras hidden here and, through PYTHONPATH, in every Python process the tests start."""
    without = config.getoption("--without")
    if not without:
        return
    os.environ["QUARTO_ARENA_TEST_WITHOUT"] = without
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(WITHOUT), os.environ.get("PYTHONPATH")) if p)
    import sys

    sys.path.insert(0, str(WITHOUT))
    from sitecustomize import extras_hidden, hide  # tests/without's, which this process did not start with

    hide(extras_hidden())


def hidden_extras() -> set[str]:
    """The extras ``--without`` hides (their tests are skipped as if the extras were not installed)."""
    return {n for n in os.environ.get("QUARTO_ARENA_TEST_WITHOUT", "").split(",") if n}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skips the tests of an extra that is not installed (plain ``pip install -e .`` runs the rest)."""
    hidden = hidden_extras()
    missing = {name for name, module in EXTRAS.items() if name in hidden or importlib.util.find_spec(module) is None}
    if config.getoption("--touching-extras"):
        words = [word for extra in hidden for word in TOUCHES[extra]]
        kept = [item for item in items if any(word in _source(item) for word in words)]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    for item in items:
        for marker in item.iter_markers("extra"):
            (name,) = marker.args
            if name not in EXTRAS:
                raise pytest.UsageError(f"{item.nodeid}: unknown extra {name!r}; known: {', '.join(EXTRAS)}")
            if name in missing:
                item.add_marker(pytest.mark.skip(reason=f"needs the {name} extra (pip install -e '.[{name}]')"))


def _source(item: pytest.Item) -> str:
    """A test function's source, and its fixtures' (where a test's use of an extra may be)."""
    import inspect

    function = getattr(item, "function", None)
    if function is None:
        return ""
    parts = [inspect.getsource(function)]
    fixtures = getattr(item, "_fixtureinfo", None)
    for name in fixtures.names_closure if fixtures is not None else ():
        for definition in fixtures.name2fixturedefs.get(name, ()):
            with contextlib.suppress(OSError, TypeError):
                parts.append(inspect.getsource(definition.func))
    return "\n".join(parts)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Under QUARTO_ARENA_REQUIRE_TOOLS=1 (CI) a skipped test fails: a green run means the C and JS bots played."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("QUARTO_ARENA_REQUIRE_TOOLS") == "1":
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped where CI requires every tool ({reason}): install it (see .ci/run)"
