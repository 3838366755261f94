"""``ladder run``'s command line: the games' options read as a run reads them (arena/settings.py), and an error that
stops the ladder told in one line with its status."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from procs import cli


@pytest.mark.parametrize(
    "options",
    [
        ["--openings", "OPENINGS", "--random-openings", "2"],
        ["--tc", "st=0"],
        ["--variant", "hexagonal"],
        ["--openings", "MISSING"],
        ["-j", "0"],
        ["--timemargin", "-1"],
        ["--adjudicate", "13"],
    ],
)
def test_the_ladder_refuses_the_games_options_a_run_refuses_with_the_same_line(
    tmp_path: Path, options: list[str]
) -> None:
    """Before, the ladder rebuilt the book and the clock itself: given a file and --random-openings it took the file
    and played on (runs refuse the pair); and it declared its options one by one, with a check of -j of its own
    ('-j must be at least 1' where a run says '--concurrency must be at least 1')."""
    (tmp_path / "openings.txt").write_text("startpos\n")
    names = {"OPENINGS": str(tmp_path / "openings.txt"), "MISSING": str(tmp_path / "missing.txt")}
    options = [names.get(o, o) for o in options]
    run = cli("play", "random", "greedy", "--out", str(tmp_path / "run"), *options, timeout=60)
    ladder = cli("ladder", "run", str(tmp_path / "lad"), "--house", "random", "--house", "greedy", *options, timeout=60)
    assert run.returncode == ladder.returncode == 2, (run.stderr, ladder.stderr)
    assert ladder.stderr == run.stderr
    assert ladder.stderr.startswith("quarto-arena: error: ") and ladder.stderr.count("\n") == 1
    assert not (tmp_path / "lad").exists()


# A ladder whose run meets an OS error no layer below turned into a LadderError (none is known to reach it today:
# the directory, its lock, logs and database each say theirs; this holds the command line's last resort).
_OS_ERROR = textwrap.dedent(
    """
    import errno
    from quarto_arena.arena.ladder.service import Ladder
    from quarto_arena.arena.console import main

    async def run(self, stop):
        raise OSError(errno.EIO, "Input/output error")

    Ladder.run = run
    main()
    """
)


def test_an_os_error_that_stops_the_ladder_is_one_line_and_not_an_internal_error(tmp_path: Path) -> None:
    """The command line caught Exception before OSError (issue 37, part 3): an OS error ended as an internal error,
    exit 70, with a traceback."""
    directory = tmp_path / "lad"
    argv = [sys.executable, "-c", _OS_ERROR, "ladder", "run", str(directory), "--house", "random", "--house", "greedy"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"quarto-arena: error: {directory}: Input/output error\n"
