"""The ``quarto-arena`` command line: thin; parses options, calls the layers below, decides what the user sees.

Exit status: 0 success; 1 a finished job whose verdict is negative (``sprt``: H0 accepted; ``check``: the engine
does not comply); 2 usage error (bad option, position, file); 3 engine failure with ``--strict`` or where an
engine cannot be started; 4 no decision (``sprt`` reached ``--max-games``); 70 internal error (a bug: please report it); 130 interrupted.
"""

from __future__ import annotations

import logging
import sys
from typing import NoReturn

import typer
from quarto_arena.protocol import rules
from quarto_arena.protocol.notation import NotationError, parse_position, parse_turns, parse_variant
from quarto_arena.protocol.rules import IllegalTurn, Position, Variant

from .display import render

app = typer.Typer(
    name="quarto-arena",
    help="UQI, the Universal Quarto Interface: play, check, rate and test Quarto engines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_USAGE = 2
EXIT_ENGINE = 3
EXIT_INTERNAL = 70


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Prints one line on stderr and exits with ``code``."""
    typer.echo(f"quarto-arena: error: {message}", err=True)
    raise typer.Exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: every error becomes one line on stderr and a documented exit status."""
    try:
        code = app(args=argv, prog_name="quarto-arena", standalone_mode=False)
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("quarto-arena: interrupted", err=True)
        sys.exit(130)
    except Exception as e:
        # Usage errors come from the click that typer bundles; duck typing keeps us off its private module path.
        format_message = getattr(e, "format_message", None)
        if not callable(format_message):
            logging.getLogger(__name__).debug("internal error", exc_info=True)
            typer.echo(f"quarto-arena: internal error (please report it): {type(e).__name__}: {e}", err=True)
            sys.exit(EXIT_INTERNAL)
        message = _one_line(str(format_message()))
        if message:  # empty when help was shown for a bare command
            typer.echo(f"quarto-arena: error: {message}", err=True)
        sys.exit(int(getattr(e, "exit_code", EXIT_USAGE)))
    sys.exit(code if isinstance(code, int) else 0)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- rules: show, perft ---------------------------------------------------------------------------------------

VariantOpt = typer.Option("standard", "--variant", help="Winning shapes: standard, or advanced (also 2x2 squares).")
AttributesOpt = typer.Option(
    "color,shape,height,fill", "--attributes", help="Attributes that count, comma-separated (beginners' rule)."
)
ClaimOpt = typer.Option("auto", "--claim", help="auto: wins are automatic; strict: QUARTO! must be called.")


def _variant(variant: str, attributes: str, claim: str) -> Variant:
    try:
        return parse_variant(variant, attributes, claim)
    except NotationError as e:
        fail(str(e))


def _position(text: str, variant: Variant) -> Position:
    try:
        return parse_position(text, variant)
    except NotationError as e:
        fail(f"bad position: {e}")


@app.command()
def show(
    position: str = typer.Argument(..., help="Position string (quote it: it has a space), or startpos."),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    turns: str = typer.Option("", "--turns", help="Turn tokens to play from POSITION first, space-separated."),
    color: bool | None = typer.Option(None, "--color/--no-color", help="Reverse video for dark pieces."),
) -> None:
    """Draw a position: each piece's four attributes at a glance, the piece in hand and the pieces left."""
    v = _variant(variant, attributes, claim)
    pos = _position(position, v)
    try:
        pos = pos.play(parse_turns(turns))
    except (NotationError, IllegalTurn) as e:
        fail(f"bad turns: {e}")
    typer.echo(render(pos, color=sys.stdout.isatty() if color is None else color))


@app.command()
def perft(
    position: str = typer.Argument(..., help="Position string (quote it), or startpos."),
    depth: int = typer.Argument(..., help="Number of turns, 0 or more.", min=0, max=32),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    divide: bool = typer.Option(False, "--divide", help="Also print the count below each legal turn."),
) -> None:
    """Count turn sequences of DEPTH turns (ending early only at the end of a game); the count is the last line."""
    v = _variant(variant, attributes, claim)
    pos = _position(position, v)
    if divide and depth > 0 and not pos.is_over:
        total = 0
        for turn in pos.legal_turns():
            n = rules.perft(pos.apply(turn), depth - 1)
            total += n
            typer.echo(f"{turn} {n}")
        typer.echo(str(total))
        return
    typer.echo(str(rules.perft(pos, depth)))


# --- play, engines -----------------------------------------------------------------------------------------------


@app.command()
def play(
    engines: list[str] = typer.Argument(
        ...,
        metavar="ENGINE ENGINE",
        help="Two engines: a built-in name (random, greedy), a quoted command line, or tcp://HOST:PORT / ipc://PATH; "
        "NAME=ENGINE names it.",
    ),
    games: int = typer.Option(2, "--games", min=1, help="Number of games (colours alternate)."),
    tc: str = typer.Option("st=60", "--tc", help="Time control: BASE+INC, st=SECONDS, depth=N, nodes=N, inf."),
    timemargin: int = typer.Option(50, "--timemargin", min=0, help="Overrun tolerated before a time forfeit, ms."),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    seed: int | None = typer.Option(None, "--seed", help="Play each colour-swapped pair from a seeded random opening."),
    name: list[str] = typer.Option([], "--name", help="Display names, in the order of the engines (repeatable)."),
    debug: str | None = typer.Option(None, "--debug", help="Write every UQI line with a time stamp into DIR."),
    log_dir: str | None = typer.Option(None, "--log-dir", help="Save each engine's standard error into DIR."),
) -> None:
    """Play a match between two engines and print each result, then the score."""
    import asyncio
    from pathlib import Path

    from .engine import EngineError
    from .match import distinct_names, engine_config, play_match, summarize
    from .records import GameRecord
    from .referee import GameSpec
    from .schedule import random_openings
    from .timecontrol import TimeControl
    from .transports import Transcript

    if len(engines) != 2:
        fail(f"play takes two engines, not {len(engines)}")
    if len(name) > 2:
        fail("--name is given more than twice")
    v = _variant(variant, attributes, claim)
    try:
        control = TimeControl.parse(tc)
        configs = distinct_names(
            [engine_config(spec, name[i] if i < len(name) else None) for i, spec in enumerate(engines)]
        )
    except ValueError as e:
        fail(str(e))
    transcript = None
    if debug is not None:
        transcript = Transcript(Path(debug) / "uqi-transcript.log")
        handler = logging.FileHandler(Path(debug) / "debug.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger("quarto_arena").addHandler(handler)
        logging.getLogger("quarto_arena").setLevel(logging.DEBUG)
    openings = random_openings(2, (games + 1) // 2, v, seed) if seed is not None else ()

    def finished(r: GameRecord) -> None:
        reason = r.termination.value if not r.termination.is_failure else f"{r.termination.value}: {r.detail}"
        typer.echo(f"Finished game {r.game_id} ({r.first} vs {r.second}): {r.result.value} {{{reason}}}")

    template = GameSpec(variant=v, time_control=control, margin_ms=timemargin)
    a, b = configs
    try:
        records = asyncio.run(
            play_match(
                a,
                b,
                games,
                template,
                openings=openings,
                log_dir=None if log_dir is None else Path(log_dir),
                transcript=transcript,
                on_game=finished,
            )
        )
    except EngineError as e:
        fail(str(e), EXIT_ENGINE)
    finally:
        if transcript is not None:
            transcript.close()
    s = summarize(records, a.name, b.name)
    typer.echo(f"Score of {a.name} vs {b.name}: {s.wins} - {s.losses} - {s.draws}  [{s.score:.3f}] {s.games}")
    for engine, reasons in sorted(s.forfeits.items()):
        typer.echo(f"Forfeits by {engine}: " + ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items())))


@app.command("engines")
def list_engines() -> None:
    """List the built-in engines (usable by name in play)."""
    from quarto_arena.engines.registry import BUILTIN

    width = max(map(len, BUILTIN))
    for e in BUILTIN.values():
        typer.echo(f"{e.name:<{width}}  {e.description}")
