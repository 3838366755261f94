"""The ``quarto-arena`` command line: thin; parses options, calls the layers below, decides what the user sees.

Exit status (the README's table, :class:`~quarto_arena.protocol.errors.ExitStatus`): 0 success; 1 a finished job
whose verdict is negative (``sprt``: H0 accepted; ``check``: the engine does not comply); 2 usage error (bad option,
position, file, or a corrupt or foreign journal); 3 engine failure (an engine cannot start, refuses its options or the
variant, or fails a game under ``--strict``); 4 ``sprt`` reached ``--max-games`` without a decision; 70 internal
error (a bug: please report it); 128 + N when stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after
printing what was played so far and how to resume.
An error of the tree in :mod:`quarto_arena.arena.errors` that reaches :func:`main` is one line and its own status.

Start-up is kept short (``--help`` and ``show`` answer in well under a tenth of a second): this module imports only
typer at the top; every command imports what it needs when it runs.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, NoReturn

import typer
from quarto_arena.protocol.errors import ExitStatus, QuartoError  # two small classes: no cost at start-up

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
DEFAULT_MARGIN_MS = 50  # the same as timecontrol.DEFAULT_MARGIN_MS (tested): not imported, for start-up time
DEFAULT_TC = "st=1"
DEFAULT_WAIT = 60.0  # seconds; the same as ServerSpec.wait
ATTRIBUTES = "color,shape,height,fill"


_REPORTED: list[str] = []  # the line fail() printed, so that main() does not add a second one


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Prints one line on stderr and exits with ``code``."""
    line = f"quarto-arena: error: {_one_line(message)}"
    _REPORTED.append(line)
    _err(line)
    raise typer.Exit(code)


def _err(text: str) -> None:
    """Prints ``text`` on stderr, each line made safe for a terminal (it may quote what an engine said)."""
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) must not turn into a traceback
        typer.echo(_safe_lines(text), err=True)


def _out(text: str) -> None:
    """Prints ``text`` on stdout, each line made safe for a terminal (it may quote what an engine said)."""
    typer.echo(_safe_lines(text))


def _safe_lines(text: str) -> str:
    from quarto_arena.protocol.text import safe_text

    return "\n".join(safe_text(line, None) for line in text.split("\n"))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("quarto-arena")
    except PackageNotFoundError:
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"quarto-arena {_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """UQI, the Universal Quarto Interface: play, check, rate and test Quarto engines."""


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: every error becomes one line on stderr and a documented exit status."""
    import logging

    from quarto_arena.protocol.text import SafeFormatter

    # What reaches stderr through logging without a handler of ours (an engine's warnings) is made safe too.
    if logging.lastResort is not None:
        logging.lastResort.setFormatter(SafeFormatter())
    try:
        code = app(args=argv, prog_name="quarto-arena", standalone_mode=False)
    except (KeyboardInterrupt, typer.Abort):
        _err("quarto-arena: interrupted")
        sys.exit(130)
    except QuartoError as e:  # any error of the tree (arena/errors.py) carries its own status
        _err(f"quarto-arena: error: {_one_line(str(e))}")
        sys.exit(int(e.status))
    except Exception as e:
        # Usage errors come from the click that typer bundles; duck typing keeps us off its private module path.
        format_message = getattr(e, "format_message", None)
        if not callable(format_message):
            logging.getLogger(__name__).debug("internal error", exc_info=True)
            _err(f"quarto-arena: internal error (please report it): {type(e).__name__}: {_one_line(str(e))}")
            sys.exit(EXIT_INTERNAL)
        message = _one_line(str(format_message()))
        if message:  # empty when help was shown for a bare command
            _err(f"quarto-arena: error: {message}")
        sys.exit(int(getattr(e, "exit_code", EXIT_USAGE)))
    if code == 130 and not _REPORTED:  # typer turns Ctrl-C inside a command into Exit(130)
        _err("quarto-arena: interrupted")
    sys.exit(code if isinstance(code, int) else 0)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- options shared by several commands ---------------------------------------------------------------------------

VariantOpt = typer.Option(
    "standard", "--variant", metavar="SHAPES", help="Winning shapes: standard, or advanced (also 2x2 squares)."
)
AttributesOpt = typer.Option(
    ATTRIBUTES, "--attributes", metavar="LIST", help="Attributes that count, comma-separated (beginners' rule)."
)
ClaimOpt = typer.Option(
    "auto", "--claim", metavar="MODE", help="auto: wins are automatic; strict: QUARTO! must be called."
)
TcOpt = typer.Option(
    DEFAULT_TC, "--tc", metavar="TC", help="Time control: BASE+INC, st=SECONDS, depth=N, nodes=N, inf (joined by ',')."
)
TimeMarginOpt = typer.Option(
    DEFAULT_MARGIN_MS, "--timemargin", metavar="MS", min=0, help="Overrun tolerated before a time forfeit, ms."
)
ConcurrencyOpt = typer.Option(1, "--concurrency", "-j", metavar="N", help="Games played at once.")
OpeningsOpt = typer.Option(
    None, "--openings", metavar="FILE", help="Openings file: a position or turns per line (instead of random ones)."
)
RandomOpeningsOpt = typer.Option(
    2, "--random-openings", metavar="K", help="Open each pair with K random turns (0: the empty board)."
)
SeedOpt = typer.Option(0, "--seed", metavar="N", help="Seed of the random openings.")
EnginesFileOpt = typer.Option(
    None, "--engines", metavar="FILE", help="TOML engines file (see the README); without ENGINE words, all of them."
)
OptionOpt = typer.Option(
    [], "--option", "-o", metavar="[ENGINE:]ID=VALUE", help="Set a UQI option of one engine, or of every engine."
)
FormatOpt = typer.Option("simple", "--format", metavar="FMT", help="Table format: any tabulate format, csv or json.")
OutOpt = typer.Option(
    None,
    "--out",
    metavar="DIR",
    help="Run directory (journal, PGN, JSON Lines, logs, standings); default out/KIND-TIME.",
)
ResumeOpt = typer.Option(None, "--resume", metavar="DIR", help="Resume the run in DIR (its journal keeps the options).")
InterleaveOpt = typer.Option(
    True,
    "--interleave/--no-interleave",
    help="Game k of every encounter before game k+1 of any (pairs kept together); --no-interleave: encounter by"
    " encounter, as cutechess.",
)
ForceOpt = typer.Option(False, "--force", help="Start over in a --out directory that holds a run already.")
ProgressOpt = typer.Option(
    None,
    "--progress-every",
    metavar="N|Ns",
    help="Off a terminal, a status line every N games or N seconds (s, m, h); 1: a line per game. "
    "Default: every 60 s and every tenth of the games.",
)
QuietOpt = typer.Option(False, "--quiet", "-q", help="No progress: only warnings and the result.")
DebugOpt = typer.Option(None, "--debug", metavar="DIR", help="Write every UQI line with a time stamp into DIR.")
ClusterOpt = typer.Option(
    None,
    "--cluster",
    metavar="ADDRESS",
    help="Play the games on a Dask cluster: tcp://SCHEDULER:8786, or local:N worker processes here "
    "(pip install 'quarto-arena[dask]').",
)
OversubscribeOpt = typer.Option(
    False, "--oversubscribe", help="With --cluster: allow machines with more worker threads than cores."
)
WebOpt = typer.Option(
    None,
    "--web",
    metavar="HOST:PORT",
    help="Serve a live page of the run at HOST:PORT, e.g. 127.0.0.1:8080 (port 0: any free one); needs the web extra.",
)
AdjudicateOpt = typer.Option(
    None,
    "--adjudicate",
    metavar="EMPTIES",
    min=1,
    max=12,
    help="End each game at EMPTIES empty squares (at most 12) with the result of perfect play (the solver).",
)
LogLimitOpt = typer.Option(
    "16M", "--log-limit", metavar="SIZE", help="Keep at most SIZE (K, M, G) of each engine's stderr log; 0: none."
)
ListenOpt = typer.Option(
    None,
    "--listen",
    metavar="ENDPOINT",
    help="Serve remote:NAME bots that connect in here: tcp://HOST:PORT (loopback only without --keys).",
)
KeysOpt = typer.Option(
    None, "--keys", metavar="DIR", help="CurveZMQ keys (quarto-arena keys new): arena.key_secret, each NAME.key."
)
WaitOpt = typer.Option(
    DEFAULT_WAIT, "--wait", metavar="SECONDS", min=0, help="How long to wait for remote bots to connect."
)


def _size(text: str) -> int:
    """``16M`` -> bytes (K, M and G are powers of 1024); a usage error otherwise."""
    value = text.strip().upper().removesuffix("B")
    factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:], 1)
    number = value[:-1] if factor > 1 else value
    if not number.isdigit():
        fail(f"--log-limit {text!r}: expected a size such as 16M, 500K or 1000000")
    return int(number) * factor


def _variant(variant: str, attributes: str, claim: str) -> Variant:
    from quarto_arena.protocol.notation import NotationError, parse_variant

    try:
        return parse_variant(variant, attributes, claim)
    except NotationError as e:
        fail(str(e))


def _position(text: str, variant: Variant) -> Position:
    from quarto_arena.protocol.notation import NotationError, parse_position

    try:
        return parse_position(text, variant)
    except NotationError as e:
        fail(f"bad position: {e}")


def _table_format(fmt: str) -> str:
    from ..output import TABLE_FORMATS

    if fmt not in TABLE_FORMATS:
        fail(f"unknown --format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return fmt
