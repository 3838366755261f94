"""The ``quarto-arena`` command line (see :mod:`.app` for the exit statuses and the start-up rule).

- :mod:`.app`: the typer app, ``main``, one-line errors, and the option declarations commands share;
- :mod:`.runs`: ``tournament``, ``play``, ``sprt``;
- :mod:`.check`: ``check``;
- :mod:`.ladder`: ``ladder run``, ``ladder standings``, ``ladder export``;
- :mod:`.newbot`: ``new-bot``;
- :mod:`.tools`: ``show``, ``perft``, ``engines``, ``keys new``, ``rate``, ``report``, ``serve``, ``analyse``.
"""

from . import check, ladder, newbot, runs, tools
from .app import DEFAULT_MARGIN_MS, EXIT_ENGINE, EXIT_INTERNAL, EXIT_USAGE, app, fail, main

__all__ = [
    "DEFAULT_MARGIN_MS",
    "EXIT_ENGINE",
    "EXIT_INTERNAL",
    "EXIT_USAGE",
    "app",
    "check",
    "fail",
    "ladder",
    "main",
    "newbot",
    "runs",
    "tools",
]
