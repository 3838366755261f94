"""The ``quarto-arena`` command line (see :mod:`.app` for the exit statuses and the start-up rule).

- :mod:`.app`: the typer app, ``main``, one-line errors, and the option declarations commands share;
- :mod:`.runs`: ``tournament``, ``play``, ``sprt``;
- :mod:`.check`: ``check``;
- :mod:`.ladder`: ``ladder run``, ``ladder standings``, ``ladder export``;
- :mod:`.newbot`: ``new-bot``;
- :mod:`.tools`: ``show``, ``perft``, ``engines``, ``keys new``, ``rate``, ``report``, ``serve``, ``analyse``;
- :mod:`.board`: ``board``.

The command modules are imported when a command needs them (:func:`.app.load_commands`), not with this package:
``from quarto_arena.arena.cli import app`` gives the app with no command until :func:`main` runs one.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .app import EXIT_ENGINE, EXIT_INTERNAL, EXIT_USAGE, app, fail, load_commands, main

__all__ = [
    "EXIT_ENGINE",
    "EXIT_INTERNAL",
    "EXIT_USAGE",
    "app",
    "board",
    "check",
    "fail",
    "ladder",
    "load_commands",
    "main",
    "newbot",
    "runs",
    "tools",
]


def __getattr__(name: str) -> ModuleType:
    """``cli.runs`` and the other command modules, imported on first use (PEP 562)."""
    if name in ("board", "check", "ladder", "newbot", "runs", "tools"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
