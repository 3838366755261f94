"""The ``quarto-arena`` command line: thin; parses options, calls the layers below, decides what the user sees.

Exit status: 0 success; 1 a finished job whose verdict is negative (``sprt``: H0 accepted; ``check``: the engine
does not comply); 2 usage error (bad option, position, file); 3 engine failure with ``--strict`` or where an
engine cannot be started; 4 no decision (``sprt`` reached ``--max-games``); 70 internal error (a bug: please
report it); 130 interrupted.
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
from .timecontrol import DEFAULT_MARGIN_MS

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
    if code == 130:  # typer turns Ctrl-C inside a command into Exit(130)
        typer.echo("quarto-arena: interrupted", err=True)
    sys.exit(code if isinstance(code, int) else 0)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- rules: show, perft ---------------------------------------------------------------------------------------

VariantOpt = typer.Option("standard", "--variant", help="Winning shapes: standard, or advanced (also 2x2 squares).")
AttributesOpt = typer.Option(
    "color,shape,height,fill", "--attributes", help="Attributes that count, comma-separated (beginners' rule)."
)
ClaimOpt = typer.Option("auto", "--claim", help="auto: wins are automatic; strict: QUARTO! must be called.")
TimeMarginOpt = typer.Option(
    DEFAULT_MARGIN_MS, "--timemargin", min=0, help="Overrun tolerated before a time forfeit, ms."
)
ConcurrencyOpt = typer.Option(1, "--concurrency", help="Games played at once.")
OpeningsOpt = typer.Option(None, "--openings", help="Openings file: a position or turns per line.")
OpeningSeedOpt = typer.Option(0, "--seed", help="Seed of the random openings.")


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
    timemargin: int = TimeMarginOpt,
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
    from .output import match_lines
    from .records import GameRecord
    from .referee import GameSpec
    from .schedule import random_openings
    from .timecontrol import TimeControl
    from .transport import Transcript

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
    for line in match_lines(summarize(records, a.name, b.name)):
        typer.echo(line)


@app.command("engines")
def list_engines() -> None:
    """List the built-in engines (usable by name in play)."""
    from quarto_arena.engines.registry import BUILTIN

    width = max(map(len, BUILTIN))
    for e in BUILTIN.values():
        typer.echo(f"{e.name:<{width}}  {e.description}")


# --- tournament, rate, sprt --------------------------------------------------------------------------------------


def _table_format(fmt: str) -> str:
    from .output import TABLE_FORMATS

    if fmt not in TABLE_FORMATS:
        fail(f"unknown --format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return fmt


@app.command()
def tournament(
    ctx: typer.Context,
    engines: list[str] = typer.Argument(
        None,
        metavar="[ENGINE]...",
        help="Engines: names from --engines FILE, built-ins, commands; NAME=ENGINE names it.",
    ),
    engines_file: str | None = typer.Option(
        None, "--engines", help="TOML engines file (all its engines if none named)."
    ),
    gauntlet: bool = typer.Option(False, "--gauntlet", help="The first engine against each of the others."),
    games: int = typer.Option(2, "--games", help="Games per encounter per round (even: colour-swapped pairs)."),
    rounds: int = typer.Option(1, "--rounds", help="Rounds."),
    concurrency: int = ConcurrencyOpt,
    tc: str = typer.Option("st=60", "--tc", help="Time control: BASE+INC, st=SECONDS, depth=N, nodes=N, inf."),
    timemargin: int = TimeMarginOpt,
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    openings: str | None = OpeningsOpt,
    random_openings: int | None = typer.Option(None, "--random-openings", help="Openings of K random turns."),
    seed: int = OpeningSeedOpt,
    strict: bool = typer.Option(False, "--strict", help="Stop at the first engine failure (exit status 3)."),
    rating_interval: int = typer.Option(0, "--rating-interval", min=0, help="Interim table every N games."),
    fmt: str = typer.Option("simple", "--format", help="Table format: any tabulate format, csv or json."),
    out: str | None = typer.Option(None, "--out", help="Tournament directory (journal, PGN, JSONL, logs)."),
    resume: str | None = typer.Option(None, "--resume", help="Resume the tournament in DIR (no other option)."),
) -> None:
    """Run a round-robin or gauntlet tournament in colour-swapped pairs; crash-safe, resumable with --resume DIR."""
    import asyncio
    import datetime
    from pathlib import Path

    from .output import TournamentView, make_progress
    from .tournament import Tournament, TournamentError, build_spec

    try:
        if resume is not None:
            # Any value not left at its default came from the user (command line or environment).
            given = [
                p
                for p in ctx.params
                if p != "resume" and getattr(ctx.get_parameter_source(p), "name", "DEFAULT") != "DEFAULT"
            ]
            if given or engines:
                fail("--resume takes no other option or engine: the journal keeps the configuration")
            directory = Path(resume)
            t = Tournament.resume(directory)
        else:
            spec = build_spec(
                engines or [],
                engines_file=None if engines_file is None else Path(engines_file),
                gauntlet=gauntlet,
                rounds=rounds,
                games=games,
                concurrency=concurrency,
                tc=tc,
                margin_ms=timemargin,
                shapes=variant,
                attributes=attributes,
                claims=claim,
                openings_file=None if openings is None else Path(openings),
                random_turns=random_openings,
                seed=seed,
                strict=strict,
                rating_interval=rating_interval,
                table_format=_table_format(fmt),
            )
            stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
            directory = Path(out or f"tournament-{stamp}")
            t = Tournament.create(spec, directory)
    except TournamentError as e:
        fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)
    with t:
        progress = make_progress(sys.stderr, t.total, len(t.records))
        view = TournamentView(
            progress,
            t.spec.names,
            list(t.records.values()),
            t.total,
            fmt=t.spec.table_format,
            interval=t.spec.rating_interval,
        )
        typer.echo(f"Tournament in {directory}: {t.total} games, {len(t.records)} already played", err=True)
        try:
            outcome = asyncio.run(t.run(view))
        except TournamentError as e:
            progress.close()
            fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)
        except KeyboardInterrupt:
            progress.close()
            typer.echo(
                f"quarto-arena: interrupted; resume with: quarto-arena tournament --resume {directory}", err=True
            )
            raise
        except OSError as e:
            progress.close()
            fail(f"{directory}: {e.strerror or e}")
        progress.close()
    typer.echo(view.table_text(t.spec.table_format))
    if t.spec.table_format not in ("csv", "json"):
        from .match import summarize
        from .output import format_table, match_lines
        from .stats import crosstable_rows
        from .tournament import rating_table

        typer.echo("")
        if len(view.names) == 2:
            for line in match_lines(summarize(view.records, *view.names)):
                typer.echo(line)
        else:
            typer.echo(format_table(crosstable_rows(rating_table(view.records, view.names)), t.spec.table_format))
    if outcome.failure is not None:
        r = outcome.failure
        fail(
            f"stopped (--strict) by game {r.game_id}: {r.termination.value}: {r.detail}; fix the engine, then "
            f"quarto-arena tournament --resume {directory}",
            EXIT_ENGINE,
        )


@app.command()
def rate(
    files: list[str] = typer.Argument(..., metavar="FILE.pgn...", help="PGN files (ours or any tool's)."),
    fmt: str = typer.Option("simple", "--format", help="Table format: any tabulate format, csv or json."),
    anchor: str | None = typer.Option(None, "--anchor", help="NAME=ELO fixes one rating (default: pool average 0)."),
) -> None:
    """Print the Elo table (and forfeits by reason) of the games in PGN files, then the crosstable."""
    from collections import Counter

    from .output import format_table, results_table
    from .pgn import PgnError, read_games
    from .records import Termination
    from .stats import ScoredGame, crosstable_rows, rating_rows
    from .stats import rate as fit

    _table_format(fmt)
    anchored = None
    if anchor is not None:
        name, sep, elo = anchor.rpartition("=")
        try:
            anchored = (name, float(elo))
        except ValueError:
            fail(f"--anchor {anchor!r}: expected NAME=ELO, e.g. greedy=1500")
        if not sep or not name:
            fail(f"--anchor {anchor!r}: expected NAME=ELO, e.g. greedy=1500")
    scored: list[ScoredGame] = []
    forfeits: dict[str, Counter[Termination]] = {}
    failures = {t.value: t for t in Termination if t.is_failure}
    try:
        for path in files:
            for g in read_games(path):
                white, black, score = g.tags.get("White", "?"), g.tags.get("Black", "?"), g.white_score
                if score is None:
                    continue
                scored.append(ScoredGame(white, black, score))
                reason = failures.get(g.tags.get("Termination", ""))
                if reason is not None and score != 0.5:
                    forfeits.setdefault(black if score == 1.0 else white, Counter())[reason] += 1
    except PgnError as e:
        fail(str(e))
    if not scored:
        fail("no finished games in " + ", ".join(files))
    try:
        table = fit(scored, anchor=anchored)
    except ValueError as e:
        fail(str(e))
    for p in table.players:
        forfeits.setdefault(p.name, Counter())
    typer.echo(format_table(results_table(rating_rows(table), forfeits), fmt))
    if fmt not in ("csv", "json"):
        typer.echo("")
        typer.echo(format_table(crosstable_rows(table), fmt))


@app.command()
def sprt(
    new: str = typer.Argument(..., help="The engine under test (NAME=ENGINE names it)."),
    base: str = typer.Argument(..., help="The engine it must beat or match."),
    elo0: float = typer.Option(..., "--elo0", help="Elo under H0 (in --model units)."),
    elo1: float = typer.Option(..., "--elo1", help="Elo under H1 (in --model units)."),
    alpha: float = typer.Option(0.05, "--alpha", help="False positive rate (accept H1 when H0 holds)."),
    beta: float = typer.Option(0.05, "--beta", help="False negative rate (accept H0 when H1 holds)."),
    model: str = typer.Option("normalized", "--model", help="Elo model of the bounds: normalized or logistic."),
    max_games: int = typer.Option(0, "--max-games", min=0, help="Give up (exit 4) after N games; 0: no limit."),
    concurrency: int = ConcurrencyOpt,
    tc: str = typer.Option("st=1", "--tc", help="Time control: BASE+INC, st=SECONDS, depth=N, nodes=N, inf."),
    timemargin: int = TimeMarginOpt,
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    openings: str | None = OpeningsOpt,
    random_openings: int = typer.Option(2, "--random-openings", min=0, max=15, help="Random opening turns."),
    seed: int = OpeningSeedOpt,
    lenient: bool = typer.Option(False, "--lenient", help="Count engine failures as losses instead of exit 3."),
) -> None:
    """Play NEW against BASE in colour-swapped pairs until the SPRT decides. Exit 0: H1 (pass), 1: H0 (fail)."""
    import asyncio
    from pathlib import Path

    from .enginesfile import EnginesFileError, engine_from_arg
    from .match import distinct_names
    from .output import make_progress
    from .schedule import ScheduleError, load_openings
    from .sprt_runner import SprtSettings, Verdict, make_sprt, run_sprt
    from .timecontrol import TimeControl
    from .tournament import GameStarted, Notice, TournamentError

    v = _variant(variant, attributes, claim)
    try:
        a, b = distinct_names([engine_from_arg(new), engine_from_arg(base)])
        settings = SprtSettings(
            test=make_sprt(elo0, elo1, alpha, beta, model),
            max_games=max_games,
            concurrency=concurrency,
            time_control=TimeControl.parse(tc),
            variant=v,
            openings=() if openings is None else tuple(load_openings(Path(openings), v)),
            random_turns=random_openings,
            seed=seed,
            margin_ms=timemargin,
            lenient=lenient,
        )
    except (EnginesFileError, ScheduleError, TournamentError, ValueError) as e:
        fail(str(e))
    lower, upper = settings.test.bounds
    typer.echo(
        f"SPRT {a.name} vs {b.name}: elo0 {elo0:g} elo1 {elo1:g} ({model}), alpha {alpha:g} beta {beta:g}, "
        f"LLR bounds ({lower:.3f}, {upper:.3f})",
        err=True,
    )
    progress = make_progress(sys.stderr, max_games)

    def event(e: GameStarted | Notice) -> None:
        if isinstance(e, GameStarted):
            progress.started(e.game.game_id, e.game.first, e.game.second)
        else:
            progress.message(f"warning: {e.text}")

    try:
        outcome = asyncio.run(
            run_sprt(
                a, b, settings, on_game=progress.finished, on_pair=lambda s: progress.note(s.line()), on_event=event
            )
        )
    except TournamentError as e:
        progress.close()
        fail(str(e), EXIT_ENGINE if e.engine else EXIT_USAGE)
    progress.close()
    verdict = {
        Verdict.H1: f"H1 accepted: {a.name} passes",
        Verdict.H0: f"H0 accepted: {a.name} fails (regression, or not the improvement tested for)",
        Verdict.NO_DECISION: f"no decision after {len(outcome.records)} games (--max-games {max_games})",
        Verdict.ENGINE_FAILURE: "engine failure: "
        + ("" if outcome.failure is None else f"game {outcome.failure.game_id}: {outcome.failure.detail}"),
    }[outcome.verdict]
    typer.echo(outcome.last.line())
    typer.echo(verdict)
    raise typer.Exit(outcome.verdict.exit_code)


# --- check ---------------------------------------------------------------------------------------------------------


@app.command()
def check(
    engine: str = typer.Argument(
        ...,
        metavar="ENGINE",
        help="A built-in name, a quoted command line, or tcp://HOST:PORT / ipc://PATH; NAME=ENGINE names it.",
    ),
    keep_going: bool = typer.Option(False, "--keep-going", help="Run every step, not only up to the first failure."),
    timeout_scale: float = typer.Option(
        1.0, "--timeout-scale", min=0.01, help="Multiply every deadline (e.g. 3 on a slow machine)."
    ),
    verbose: bool = typer.Option(False, "--verbose", help="Print every step's I/O, not only a failed step's."),
) -> None:
    """Check that an engine speaks UQI: numbered steps, the I/O of a failed step; exit 0 only if it complies."""
    import asyncio

    from .compliance import CheckTimeouts, format_report, run_check
    from .match import engine_config

    try:
        config = engine_config(engine)
    except ValueError as e:
        fail(str(e))
    report = asyncio.run(run_check(config, timeouts=CheckTimeouts().scaled(timeout_scale), keep_going=keep_going))
    if not report.started:
        fail(report.steps[0].reason, EXIT_ENGINE)
    for line in format_report(report, verbose=verbose):
        typer.echo(line)
    raise typer.Exit(0 if report.complies else 1)
