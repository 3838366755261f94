"""Step 21 of the check: how much of its time a bot uses under a CPU load the check makes itself.

The forfeits a bot author finds only on a loaded machine (a ladder, a tournament at ``-j`` the cores) come from
keeping too little back: SPEC §4.5 asks an engine to plan a turn's limit less a move overhead (50 ms on a loaded
machine, never more than half of the limit), to spend about its fair share of a clock, and never more than twice
that nor more than a quarter of the time left. This step starts one CPU burner per CPU, then times searches as the
arena does (from the write of ``go`` to the chunk holding the turn):

- ``go movetime 100`` at three positions: a warning when the median takes more than :data:`MOVETIME_USE` of it
  (the bot kept back less than 25 ms: the Go bot that kept 25 ms lost 5 of 1,607 ladder games on time);
- ``go time 2000 inc 100`` and ``go time 1000 movestogo 2``: a warning when the median takes more than
  :data:`SHARE_USE` times the fair share or more than a quarter of the clock, and when ``movestogo`` is refused (a bot
  that refuses it cannot play moves-per-period controls).

Every finding is a should: the step only warns (``--strict`` fails it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator
from typing import Final

from quarto_arena.protocol.rules import Variant
from quarto_arena.protocol.sdk import CLOCK_CAP, fair_share_ms
from quarto_arena.protocol.uqi import Go, format_command

from .checker import Checker, quoted
from .steps import Probe, search_probe, start_new_game

MOVETIME: Final = 100
"""The short ``movetime`` of the step, ms."""
MOVETIME_USE: Final = 0.75
"""The part of ``movetime`` a search may take, as the arena measures it under the step's load, before a warning."""
SHARE_USE: Final = 2.0
"""How many fair shares (SPEC §4.5) a search may take before a warning; never more than a quarter of the clock."""
CLOCKS: Final[tuple[Go, ...]] = (
    Go(time=2000, inc=100, otime=2000, oinc=100),
    Go(time=1000, otime=1000, movestogo=2),
)
"""The clocks of the step: a game's clock with an increment, and the last turns of a moves-per-period control."""
POSITIONS: Final[tuple[Probe, ...]] = (
    Probe("the opening placement", Variant(), "position startpos turns 3"),
    Probe("a mid-game position", Variant(), "position ..8./.3../..9./1... 7"),
    Probe("startpos plus turns", Variant(), "position startpos turns 3 c47 d4e"),
)
"""Where the step searches: early enough that a bot that searches has something to search."""
_BURNER: Final = "while True: pass"


@contextlib.contextmanager
def cpu_load(ck: Checker) -> Iterator[None]:
    """One process spinning on each CPU while the block runs, each in a session of its own, killed and reaped after
    (their ids join ``ck.pids``, so that a caller can see none is left)."""
    burners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(os.cpu_count() or 1):
            burner = subprocess.Popen(
                [sys.executable, "-c", _BURNER],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            burners.append(burner)
            ck.pids.append(burner.pid)
        ck.recorder.add("#", f"{len(burners)} CPU burners running")
        yield
    finally:
        for burner in burners:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(burner.pid, signal.SIGKILL)
            burner.wait()


async def step_time_use(ck: Checker) -> None:
    """21. Should: under a CPU burner per CPU, a search at ``movetime 100`` takes at most 3/4 of it, and a search on
    a clock at most twice its fair share and a quarter of the clock; ``movestogo`` is accepted (SPEC §4.5)."""
    with cpu_load(ck):
        for go in (Go(movetime=MOVETIME), *CLOCKS):
            line = format_command(go)
            used: list[float] = []
            for probe in POSITIONS:
                await start_new_game(ck, probe.variant)
                position = probe.position()
                searched = await search_probe(ck, probe, position, go, refusal=True)
                if searched.turn is None:
                    ck.warn("§4.5", f"refused {quoted(line)} with {quoted(searched.line)}")
                    break
                allowed = MOVETIME * MOVETIME_USE
                if go.time is not None:
                    allowed = min(SHARE_USE * fair_share_ms(go, position), CLOCK_CAP * go.time)
                used.append(searched.ms / allowed)
            if used and (median := statistics.median(used)) > 1:
                what = f"{MOVETIME_USE:.0%} of it" if go.time is None else "twice its fair share, a quarter at most"
                ck.warn("§4.5", f"used {median:.0%} of what {quoted(line)} allows a search under load ({what})")
