"""The ``quarto-arena`` console script: :func:`quarto_arena.arena.cli.main`, with Ctrl-C during its start-up too.

:func:`~quarto_arena.arena.cli.app.main` turns Ctrl-C into ``quarto-arena: interrupted`` and status 130 once it
runs; this module is the console script's target so that a Ctrl-C that lands while the command line is still being
imported (typer, the command's module: a tenth of a second, longer on a loaded machine) ends the same way, not in
a traceback of whatever import it interrupted. It imports nothing but :mod:`sys` before that.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Runs the command line (``sys.argv``); a Ctrl-C before it could catch one is status 130 and one line."""
    try:
        from .cli.app import main as run

        run()
    except KeyboardInterrupt:
        try:
            sys.stderr.write("quarto-arena: interrupted\n")
            sys.stderr.flush()
        except OSError:  # a closed terminal: the status still says it
            pass
        sys.exit(130)
