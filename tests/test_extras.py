"""The README's quick loop passes on the set-up it gives (``pip install -e ".[dev]"``: no Dask), and without any one
extra: the suite collects, and every test that touches the extra (its source names it: ``cluster``, ``--web``,
``playwright``...) passes or is skipped as the README promises. One environment with every extra runs them, the
extra hidden from each Python process (``pytest --without EXTRA``: tests/conftest.py, tests/without/).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.parametrize("extra", ["dask", "web", "browser"])
def test_the_tests_that_touch_an_extra_pass_without_it(extra: str) -> None:
    if os.environ.get("QUARTO_ARENA_TEST_WITHOUT"):
        pytest.skip("already a run without extras")  # this test runs the suite: not inside itself
    env = {k: v for k, v in os.environ.items() if k != "QUARTO_ARENA_REQUIRE_TOOLS"}  # skips are the point here
    args = ["-m", "not slow", "-q", "-p", "no:cacheprovider", "-n", "2", "--without", extra, "--touching-extras"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    tail = done.stdout[-4000:]
    # Exit 5: the extra's tests are all slow (the browsers'), and the whole suite collected without it.
    assert done.returncode in (0, 5), tail
    assert " error" not in tail and "Error" not in tail, tail
    if done.returncode == 0:
        assert " passed" in tail, tail


def test_hiding_an_extra_hides_it_from_the_processes_the_tests_start(tmp_path: Path) -> None:
    code = "import importlib.util, sys\ntry:\n    import distributed\nexcept ImportError:\n    sys.exit(3)\n"
    env = {**os.environ, "QUARTO_ARENA_TEST_WITHOUT": "dask", "PYTHONPATH": str(ROOT / "tests" / "without")}
    assert subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 3
    bad = {**env, "QUARTO_ARENA_TEST_WITHOUT": "dsak"}
    r = subprocess.run([sys.executable, "-c", "pass"], env=bad, capture_output=True, text=True, check=False)
    assert r.returncode != 0 and "unknown extra 'dsak'" in r.stderr
