"""Fixtures shared by the test files: the compiled C example bot."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

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
