"""The README's "Using it" examples, run as the script they are, in order, against a fresh directory.

A new user pastes them after the set-up command; so does this test (with the test environment's Python standing in
for ``.venv``). Every command must succeed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def examples() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- readme-examples:begin -->\n```sh\n(.*?)```\n<!-- readme-examples:end -->", text, re.DOTALL)
    assert m is not None, "the README lost its examples block"
    return m.group(1)


@pytest.mark.slow
def test_the_readme_examples_run_in_order(tmp_path: Path) -> None:
    script = examples()
    assert script.startswith(". .venv/bin/activate")
    (tmp_path / "engines" / "c").mkdir(parents=True)
    shutil.copy(ROOT / "engines" / "c" / "quarto_bot.c", tmp_path / "engines" / "c")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "activate").write_text(f'PATH="{Path(sys.executable).parent}:$PATH"\n')
    # Run as written: no fixed port that another program (another test) may hold; endpoints are socket files.
    assert not re.search(r"tcp://|--web|:\d{2,5}\b", script), "an example names a port: use ipc:// or port 0"
    (tmp_path / "examples.sh").write_text("set -euo pipefail\n" + script)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    r = subprocess.run(
        ["bash", "examples.sh"], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False
    )
    assert r.returncode == 0, f"stdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    assert "complies with UQI 1" in r.stdout
    assert "H1 accepted: mine passes" not in r.stdout  # sprt names the engine my_bot, not mine
    assert "H1 accepted: my_bot passes" in r.stdout
    for run in ("m1", "z1", "r1", "t1", "s1"):
        assert (tmp_path / "out" / run / "journal.qaj").exists(), run
    assert "Traceback" not in r.stderr
    # Secret keys go where nothing is committed (out/ is in .gitignore), not into a keys/ folder of the checkout.
    assert (tmp_path / "out" / "keys" / "mine.key_secret").is_file() and not (tmp_path / "keys").exists()
    ignored = (Path(__file__).resolve().parent.parent / ".gitignore").read_text().splitlines()
    assert "/out/" in ignored and "/my_bot" in ignored
    # The bridge the examples put in the background was stopped by their own `kill %1`, and no engine is left.
    left = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if entry.name.isdigit() and (str(tmp_path) in cmdline or cwd == str(tmp_path)):
            left.append(cmdline)
    assert left == []
