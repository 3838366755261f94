"""The ``quarto-arena`` command line: thin; parses options, calls the layers below, decides what the user sees.

Exit status (the README's table, :class:`~quarto_arena.protocol.errors.ExitStatus`): 0 success; 1 a finished job
whose verdict is negative (``sprt``: H0 accepted; ``check``: the engine does not comply); 2 usage error (bad option,
position, file, or a corrupt or foreign journal); 3 engine failure (an engine cannot start, refuses its options or the
variant, or fails a game under ``--strict``); 4 ``sprt`` reached ``--max-games`` without a decision; 70 internal
error (a bug: please report it); 128 + N when stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after
printing what was played so far and how to resume.
An error of the tree in :mod:`quarto_arena.arena.errors` that reaches :func:`main` is one line and its own status.

Start-up is kept short (``--help`` and ``show`` answer in well under a tenth of a second): this module imports only
typer at the top; :func:`main` imports only the module of the command it runs (:data:`COMMAND_MODULES`), and every
command imports what it needs when it runs. The commands that start engines import most of that first
(:func:`import_to_run`), with Ctrl-C held until the imports are over (arena/console.py says why).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn

import typer
from quarto_arena.protocol.errors import ExitStatus, QuartoError  # two small classes: no cost at start-up

from .. import package_version
from ..console import INTERRUPTED, HeldInterrupts  # signal and sys only: no cost at start-up
from ..options import Flag, RunOptions, option_fields, parse_size  # the standard library only: no cost at start-up

if TYPE_CHECKING:
    from quarto_arena.protocol.rules import Position, Variant


app = typer.Typer(
    name="quarto-arena",
    help="UQI, the Universal Quarto Interface: play, check, rate and test Quarto engines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

EXIT_USAGE = ExitStatus.USAGE
EXIT_ENGINE = ExitStatus.ENGINE
EXIT_INTERNAL = ExitStatus.INTERNAL


_REPORTED: list[str] = []  # the line fail() printed, so that main() does not add a second one


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Prints one line on stderr and exits with ``code``."""
    line = f"quarto-arena: error: {_one_line(message)}"
    _REPORTED.append(line)
    echo_err(line)
    raise typer.Exit(code)


def leave(line: str, code: int) -> NoReturn:
    """Prints ``line`` (no error: a command that ends as it documents, say stopped by a signal) on stderr and exits
    with ``code``; nothing more is printed."""
    _REPORTED.append(line)
    echo_err(line)
    raise typer.Exit(code)


def echo_err(text: str) -> None:
    """Prints ``text`` on stderr, each line made safe for a terminal (it may quote what an engine said)."""
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) must not turn into a traceback
        typer.echo(_safe_lines(text), err=True)


def echo_out(text: str) -> None:
    """Prints ``text`` on stdout, each line made safe for a terminal (it may quote what an engine said)."""
    typer.echo(_safe_lines(text))


def _safe_lines(text: str) -> str:
    from quarto_arena.protocol.text import safe_text

    return "\n".join(safe_text(line, None) for line in text.split("\n"))


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"quarto-arena {package_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """UQI, the Universal Quarto Interface: play, check, rate and test Quarto engines."""


#: The module (of this package) that declares each command. :func:`main` imports only the one it runs: a typer app
#: builds every command it holds at each start (signatures, options), and ``play`` need not pay for ``ladder``'s.
#: Anything else on the command line (``--help``, a misspelt command) loads them all, in this order, so that the
#: command list and typer's suggestions are the same as ever (tests/test_cli_lazy.py holds this table to the app).
COMMAND_MODULES: Final = {
    "tournament": "runs",
    "play": "runs",
    "sprt": "runs",
    "check": "check",
    "new-bot": "newbot",
    "show": "tools",
    "perft": "tools",
    "engines": "tools",
    "rate": "tools",
    "report": "tools",
    "serve": "tools",
    "analyse": "tools",
    "tune": "tune",
    "board": "board",
    "ladder": "ladder",
    "keys": "tools",
}
ALL_COMMAND_MODULES: Final = ("check", "ladder", "newbot", "runs", "tools", "tune", "board")


#: What the commands of a module import when one of them runs (they import it then, not with the module, so that
#: ``--help`` and the short commands start fast): :func:`import_to_run` imports it first, with Ctrl-C held
#: (:class:`~quarto_arena.arena.console.HeldInterrupts`). The rest (uvloop, the report's modules) is small.
RUNS_WITH: Final = {
    "runs": ("asyncio", "quarto_arena.arena.run", "quarto_arena.arena.output", "quarto_arena.arena.roster"),
    "check": ("asyncio", "quarto_arena.arena.compliance", "quarto_arena.arena.run", "quarto_arena.arena.roster"),
    "tune": ("asyncio", "quarto_arena.arena.run", "quarto_arena.arena.output", "quarto_arena.arena.tune"),
}


def load_commands(args: Sequence[str] = ()) -> None:
    """Registers on :data:`app` the commands ``args`` can run: the named command's module, or every module."""
    import importlib

    module = COMMAND_MODULES.get(args[0]) if args else None
    for name in (module,) if module is not None else ALL_COMMAND_MODULES:
        importlib.import_module(f"{__package__}.{name}")


def import_to_run(module: str) -> None:
    """Imports what the commands of ``module`` import when one runs (:data:`RUNS_WITH`), with Ctrl-C held: the first
    thing their bodies do, once typer has read their options (a usage error does not wait for these imports)."""
    import importlib

    with HeldInterrupts():  # an import is no place for a KeyboardInterrupt (arena/console.py)
        for name in RUNS_WITH[module]:
            importlib.import_module(name)


def _app_to_run(args: Sequence[str]) -> typer.Typer:
    """:data:`app`, or a copy of it that holds only the command ``args`` names.

    typer builds every command an app holds (each option, from the command's signature) before it runs one: a module
    declares several (``runs``: ``tournament``, ``play`` and ``sprt``, some forty options each), and ``play`` need not
    pay for the other two's (benchmarks/startup.py). ``--help`` and a misspelt command get the whole app. The copy
    leaves :data:`app` as it is, so that a later call in the same process finds every command.
    """
    name = args[0] if args else None
    if name in (None, "-h", "--help", "--version"):
        return _listing(app)  # the list of commands, or the version: no command runs
    if name not in COMMAND_MODULES:
        return app
    import copy

    one = copy.copy(app)
    one.registered_commands = [c for c in app.registered_commands if _command_name(c) == name]
    one.registered_groups = [g for g in app.registered_groups if getattr(g.typer_instance, "info", g).name == name]
    return one


def _command_name(command: Any) -> str:
    """typer's name for a registered command: the name it was given, or its function's with "_" as "-"."""
    return str(command.name or getattr(command.callback, "__name__", "").lower().replace("_", "-"))


def _listing(of: typer.Typer) -> typer.Typer:
    """A copy of ``of`` whose commands are their names and help alone (groups alike, within): what ``--help`` lists.

    typer builds each command it lists in full (every option, from its signature) to show a line of its help: half
    of what ``--help`` cost to start (benchmarks/startup.py). The list is the same (tests/test_cli_lazy.py).
    """
    import copy
    import inspect

    listing = copy.copy(of)
    listing.registered_commands = []
    for command in of.registered_commands:
        entry = copy.copy(command)
        entry.name = _command_name(command)
        entry.help = command.help if command.help is not None else inspect.getdoc(command.callback)
        entry.callback = _listed
        listing.registered_commands.append(entry)
    listing.registered_groups = []
    for group in of.registered_groups:
        inner = copy.copy(group)
        if group.typer_instance is not None:
            inner.typer_instance = _listing(group.typer_instance)
        listing.registered_groups.append(inner)
    return listing


def _listed() -> None:
    """Stands for a command in the list of commands, which shows its name and help only; never run."""


#: What may run without logging made safe: help, and the commands that start no engine, server or worker and read
#: no run (a journal holds what engines said). Importing logging is a twentieth of what ``show`` costs to start
#: (benchmarks/startup.py). Any other command, and one of these whose module imports logging, gets
#: :func:`_safe_logging` before it runs.
QUIET_COMMANDS: Final = frozenset({"show", "perft", "engines", "new-bot", "keys", "-h", "--help"})


def _safe_logging() -> None:
    """What reaches stderr through logging without a handler of ours (an engine's warnings) is made safe too."""
    import logging

    from quarto_arena.protocol.safelog import SafeFormatter

    if logging.lastResort is not None:
        logging.lastResort.setFormatter(SafeFormatter())


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: every error becomes one line on stderr and a documented exit status."""
    try:
        args = sys.argv[1:] if argv is None else argv
        with HeldInterrupts():  # an import is no place for a KeyboardInterrupt (arena/console.py)
            load_commands(args)
        if "logging" in sys.modules or not args or args[0] not in QUIET_COMMANDS:
            _safe_logging()
        code = _app_to_run(args)(args=argv, prog_name="quarto-arena", standalone_mode=False)
    except (KeyboardInterrupt, typer.Abort):
        echo_err(INTERRUPTED)
        sys.exit(130)
    except QuartoError as e:  # any error of the tree (arena/errors.py) carries its own status
        echo_err(f"quarto-arena: error: {_one_line(str(e))}")
        sys.exit(int(e.status))
    except Exception as e:
        # Usage errors come from the click that typer bundles; duck typing keeps us off its private module path.
        format_message = getattr(e, "format_message", None)
        if not callable(format_message):
            import logging

            logging.getLogger(__name__).debug("internal error", exc_info=True)
            echo_err(f"quarto-arena: internal error (please report it): {type(e).__name__}: {_one_line(str(e))}")
            sys.exit(EXIT_INTERNAL)
        message = _chess_words(sys.argv[1:] if argv is None else argv) or _one_line(str(format_message()))
        if message:  # empty when help was shown for a bare command
            echo_err(f"quarto-arena: error: {message}")
        sys.exit(int(getattr(e, "exit_code", EXIT_USAGE)))
    if code == 130 and not _REPORTED:  # typer turns Ctrl-C inside a command into Exit(130)
        echo_err(INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)


#: cutechess-cli's and fastchess's options, and what quarto-arena says instead (a usage error names them).
_CHESS_WORDS: Final = {
    "-engine": "engines are words here: quarto-arena play NAME=./my_bot greedy (-engine cmd=./my_bot name=NAME)",
    "-each": "options for every engine: --tc 60+0.5, -o ID=VALUE (-each tc=... option.ID=VALUE)",
    "-rounds": "--rounds N (each round repeats every encounter) with --games N per encounter",
    "-games": "--games N (games per encounter: even for whole colour-swapped pairs)",
    "-pgnout": "--out DIR: every run writes DIR/games.pgn (and games.jsonl, the journal, standings)",
    "-concurrency": "-j N, --concurrency N",
    "-openings": "--openings FILE (one opening a line) or --random-openings K",
    "-sprt": "quarto-arena sprt NEW BASE --elo0 0 --elo1 10",
    "-tournament": "quarto-arena tournament (round-robin) or tournament --gauntlet",
    "-recover": "--lenient (the default of play and tournament): an engine failure is a lost game",
    "-resume": "--resume DIR",
    "-repeat": "games always come in colour-swapped pairs from the same opening",
    "-draw": "--adjudicate EMPTIES: the solver ends games by perfect play",
    "-config": "--engines FILE (a TOML engines file)",
}


def _chess_words(args: Sequence[str]) -> str | None:
    """A usage error's message when the command line holds cutechess's or fastchess's words: their equivalents."""
    found = []
    for word in args:
        if word == "--":
            break
        key = word.split("=", 1)[0].lower()
        if key in _CHESS_WORDS and key not in found:
            found.append(key)
    if not found:
        return None
    shown = "; ".join(f"{w} -> {_CHESS_WORDS[w]}" for w in found)
    return f"{', '.join(found)}: cutechess-cli's or fastchess's option{'s' if len(found) > 1 else ''}; here: {shown}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- options shared by several commands ---------------------------------------------------------------------------


@functools.cache
def _option_table(command: str) -> dict[str, tuple[Flag, Any]]:
    """``command``'s options by name, built once: a run command declares some forty (start-up)."""
    return {n: (f, d) for n, f, d in option_fields(command)}


def run_option(name: str, command: str = "play") -> Any:
    """The typer declaration of the run option ``name`` (declared once, in :class:`~..options.RunOptions`), as
    ``command`` spells and defaults it; other commands that take the same option use it too."""
    how, default = _option_table(command)[name]
    if isinstance(default, list):
        default = list(default)  # each declaration its own list, as when the table was built for each
    return typer.Option(
        default,
        *how.flags,
        metavar=how.metavar,
        help=how.help_for(command),
        min=how.minimum,
        max=how.maximum,
    )


# The run options that several command modules declare; each module declares its own others with run_option.
VariantOpt = run_option("variant")
AttributesOpt = run_option("attributes")
ClaimOpt = run_option("claim")
FormatOpt = run_option("fmt")


def size_option(text: str) -> int:
    """``16M`` -> bytes (K, M and G are powers of 1024); a usage error otherwise."""
    try:
        return parse_size(text, "--log-limit")
    except ValueError as e:
        fail(str(e))


def as_given(ctx: typer.Context, options: RunOptions) -> RunOptions:
    """``options`` as the user meant them: ``--openings FILE`` without ``--random-openings`` means the file's
    openings, not random ones (every command that takes both reads them so)."""
    source = ctx.get_parameter_source("random_openings")
    if options.openings is not None and getattr(source, "name", "DEFAULT") == "DEFAULT":
        from dataclasses import replace

        return replace(options, random_openings=None)
    return options


def variant_option(variant: str, attributes: str, claim: str) -> Variant:
    """``--variant``, ``--attributes`` and ``--claim`` as a Variant; a usage error naming a bad one."""
    from quarto_arena.protocol.notation import NotationError, parse_variant

    try:
        return parse_variant(variant, attributes, claim)
    except NotationError as e:
        fail(str(e))


def position_option(text: str, variant: Variant) -> Position:
    """A position argument; a usage error (``bad position: ...``) otherwise."""
    from quarto_arena.protocol.notation import NotationError, parse_position

    try:
        return parse_position(text, variant)
    except NotationError as e:
        fail(f"bad position: {e}")


def table_format_option(fmt: str) -> str:
    """``--format``, checked against the table formats there are; a usage error naming them otherwise."""
    if fmt in ("simple", "csv", "json"):
        return fmt  # the usual ones, known without importing tabulate (a tenth of a short run's start-up)
    from ..output import TABLE_FORMATS

    if fmt not in TABLE_FORMATS:
        fail(f"unknown --format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return fmt
