"""Fixtures shared by the test files: the compiled C example bot; in CI, a skipped test is a failure."""

from __future__ import annotations

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Under QUARTO_ARENA_REQUIRE_TOOLS=1 (CI) a skipped test fails: a green run means the C and JS bots played."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("QUARTO_ARENA_REQUIRE_TOOLS") == "1":
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped where CI requires every tool ({reason}): install it (see .ci/run)"
