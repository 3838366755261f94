"""The ``quarto-arena`` command line: thin; parses options, calls the layers below, decides what the user sees.

Exit status: 0 success; 1 a finished job whose verdict is negative (``sprt``: H0 accepted; ``check``: the engine
does not comply); 2 usage error (bad option, position, file); 3 engine failure with ``--strict`` or where an
engine cannot be started; 4 no decision (``sprt`` reached ``--max-games``); 130 interrupted.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

app = typer.Typer(
    name="quarto-arena",
    help="UQI, the Universal Quarto Interface: play, check, rate and test Quarto engines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_USAGE = 2
EXIT_ENGINE = 3


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Prints one line on stderr and exits with ``code``."""
    typer.echo(f"quarto-arena: error: {message}", err=True)
    raise typer.Exit(code)


def main() -> None:
    """Console-script entry point."""
    try:
        app(standalone_mode=True)
    except KeyboardInterrupt:
        typer.echo("quarto-arena: interrupted", err=True)
        sys.exit(130)
