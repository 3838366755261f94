"""The ``quarto-arena`` command line (see :mod:`.app` for the exit statuses and the start-up rule).

- :mod:`.app`: the typer app, ``main``, one-line errors, and the option declarations commands share;
- :mod:`.runs`: ``tournament``, ``play``, ``sprt``;
- :mod:`.check`: ``check``;
- :mod:`.tools`: ``show``, ``perft``, ``engines``, ``keys new``, ``rate``, ``report``, ``serve``, ``analyse``.
"""

from . import check, runs, tools
from .app import DEFAULT_MARGIN_MS, EXIT_ENGINE, EXIT_INTERNAL, EXIT_USAGE, app, fail, main

__all__ = [
    "DEFAULT_MARGIN_MS",
    "EXIT_ENGINE",
    "EXIT_INTERNAL",
    "EXIT_USAGE",
    "app",
    "check",
    "fail",
    "main",
    "runs",
    "tools",
]
