"""Fixtures shared by the test files: the compiled C example bot; a test that needs an optional extra is skipped where
it is missing (``@pytest.mark.extra("dask")``); in CI, a skipped test is a failure."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skips the tests of an extra that is not installed (plain ``pip install -e .`` runs the rest)."""
    missing = {name for name, module in EXTRAS.items() if importlib.util.find_spec(module) is None}
    for item in items:
        for marker in item.iter_markers("extra"):
            (name,) = marker.args
            if name not in EXTRAS:
                raise pytest.UsageError(f"{item.nodeid}: unknown extra {name!r}; known: {', '.join(EXTRAS)}")
            if name in missing:
                item.add_marker(pytest.mark.skip(reason=f"needs the {name} extra (pip install -e '.[{name}]')"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Under QUARTO_ARENA_REQUIRE_TOOLS=1 (CI) a skipped test fails: a green run means the C and JS bots played."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("QUARTO_ARENA_REQUIRE_TOOLS") == "1":
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped where CI requires every tool ({reason}): install it (see .ci/run)"
