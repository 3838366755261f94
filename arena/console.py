"""The ``quarto-arena`` console script: :func:`quarto_arena.arena.cli.main`, with Ctrl-C during its start-up too.

:func:`~quarto_arena.arena.cli.app.main` turns Ctrl-C into ``quarto-arena: interrupted`` and status 130 once it
runs; this module is the console script's target so that a Ctrl-C that lands while the command line is still being
imported (typer, the command's modules: a tenth of a second, longer on a loaded machine) ends the same way.

The imports run with Ctrl-C *held* (:class:`HeldInterrupts`): noted, and acted on when they are over. Raised in the
middle of an import, a KeyboardInterrupt is not always one: CPython reports it as "Exception ignored" and goes on
when it lands in a callback (the import system's lock clean-up), or turns it into a RuntimeError when it lands in a
class's ``__set_name__`` (a dataclass's fields), and the command then runs on or ends in a traceback (both seen under
load, about 1 in 150 interrupts). This module imports nothing but :mod:`sys` and :mod:`signal`.
"""

from __future__ import annotations

import gc
import signal
import sys
from types import FrameType, TracebackType

__all__ = ["INTERRUPTED", "HeldInterrupts", "main"]

INTERRUPTED = "quarto-arena: interrupted"
"""What a command stopped by Ctrl-C prints on stderr (status 130), here and in :func:`quarto_arena.arena.cli.main`."""


class HeldInterrupts:
    """``with HeldInterrupts():`` holds Ctrl-C (SIGINT) while the block runs and raises KeyboardInterrupt when it ends
    if one came meanwhile. For blocks that only import: short, and unsafe to interrupt. Only where SIGINT has Python's
    default handler, in the main thread; anywhere else the block runs as it is.

    The cyclic garbage collector is paused in the block too. Imports make objects that live as long as the process
    (modules, classes, functions) and almost no garbage, yet each 700 of them start a pass over the young ones: some
    fifty passes while a 2-game ``play`` imports, 9 ms of its CPU (benchmarks/startup.py). When the block imported
    a module, what it made is frozen (``gc.freeze``) rather than left for the first pass after it: a run freezes it
    anyway before its games (arena/cli/runs.py)."""

    def __init__(self) -> None:
        self.caught = False
        self._holding = False
        self._collecting = False
        self._modules = 0

    def _note(self, _signum: int, _frame: FrameType | None) -> None:
        self.caught = True

    def __enter__(self) -> HeldInterrupts:
        self._collecting = gc.isenabled()
        self._modules = len(sys.modules)
        gc.disable()
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            try:
                signal.signal(signal.SIGINT, self._note)
                self._holding = True
            except ValueError:  # not the main thread: signals are not ours to hold
                pass
        return self

    def __exit__(
        self, kind: type[BaseException] | None, _error: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if self._holding:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._holding = False
        if self._collecting:
            if len(sys.modules) != self._modules:
                gc.freeze()
            gc.enable()
        if self.caught and kind is None:
            raise KeyboardInterrupt


def main() -> None:
    """Runs the command line (``sys.argv``); a Ctrl-C before it could catch one is status 130 and one line."""
    try:
        with HeldInterrupts():
            from .cli.app import main as run
        run()
    except KeyboardInterrupt:
        try:
            sys.stderr.write(INTERRUPTED + "\n")
            sys.stderr.flush()
        except OSError:  # a closed terminal: the status still says it
            pass
        sys.exit(130)
