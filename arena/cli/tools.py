"""The commands that are not runs: ``show``, ``perft``, ``engines``, ``keys new``, ``rate``, ``report``, ``serve``,
``analyse``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from quarto_arena.protocol.rules import Variant


from .app import (
    AttributesOpt,
    ClaimOpt,
    FormatOpt,
    VariantOpt,
    app,
    echo_err,
    echo_out,
    fail,
    position_option,
    table_format_option,
    variant_option,
)

# --- rules: show, perft ---------------------------------------------------------------------------------------


@app.command()
def show(
    position: str = typer.Argument(..., help="Position string (quote it: it has a space), or startpos."),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    turns: str = typer.Option("", "--turns", metavar="TOKENS", help="Turn tokens to play from POSITION first."),
    color: bool | None = typer.Option(None, "--color/--no-color", help="Reverse video for dark pieces."),
) -> None:
    """Draw a position: each piece's four attributes at a glance, the piece in hand and the pieces left."""
    from quarto_arena.protocol.notation import NotationError, parse_turns
    from quarto_arena.protocol.rules import IllegalTurn

    from ..display import render

    v = variant_option(variant, attributes, claim)
    pos = position_option(position, v)
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
    """Count turn sequences of DEPTH turns, every legal token once (SPEC.md §2.5); the count is the last line."""
    from quarto_arena.protocol import rules

    v = variant_option(variant, attributes, claim)
    pos = position_option(position, v)
    if divide and depth > 0 and not pos.is_over:
        total = 0
        for turn in pos.legal_turns():
            n = rules.perft(pos.apply(turn), depth - 1)
            total += n
            typer.echo(f"{turn} {n}")
        typer.echo(str(total))
        return
    typer.echo(str(rules.perft(pos, depth)))


@app.command("engines")
def list_engines() -> None:
    """List the built-in engines (usable by name wherever an engine is asked for)."""
    from quarto_arena.engines.registry import BUILTIN

    width = max(map(len, BUILTIN))
    for e in BUILTIN.values():
        typer.echo(f"{e.name:<{width}}  {e.description}")


# --- keys ---------------------------------------------------------------------------------------------------------

keys_app = typer.Typer(
    name="keys",
    help="CurveZMQ keys for bots that connect in (--listen ... --keys DIR).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(keys_app)


@keys_app.command("new")
def keys_new(
    name: str = typer.Argument(..., metavar="NAME", help="The bot's name (remote:NAME), or arena for the arena's."),
    directory: str = typer.Option(..., "--dir", metavar="KEYS", help="The keys directory (created if needed)."),
) -> None:
    """Make a key pair: KEYS/NAME.key (public: give it to the other side) and KEYS/NAME.key_secret (keep it).

    The arena's own pair is named arena. Each side makes its own pair and sends only NAME.key: a bot's author keeps
    NAME.key_secret and is given arena.key; the arena keeps arena.key_secret and every bot's NAME.key.
    """
    from ..server import KeysError, new_key_pair

    try:
        public, secret = new_key_pair(Path(directory), name)
    except KeysError as e:
        fail(str(e))
    typer.echo(f"{public}\n{secret}")


# --- rate --------------------------------------------------------------------------------------------------------

_MAX_NAME = 256  # characters of a player's name in a PGN file that rate takes
_CROSSTABLE_PLAYERS = 40  # players up to which rate prints the crosstable (one column each)


@app.command()
def rate(
    files: list[str] = typer.Argument(..., metavar="FILE.pgn...", help="PGN files (ours or any tool's)."),
    fmt: str = FormatOpt,
    anchor: str | None = typer.Option(
        None, "--anchor", metavar="NAME=ELO", help="Fix one rating (default: pool average 0)."
    ),
) -> None:
    """Print the Elo table (and forfeits by reason) of the games in PGN files, then the crosstable."""
    from collections import Counter

    from ..output import MARGIN_NOTE, format_table, results_table
    from ..pgn import PgnError, read_games
    from ..records import Termination
    from ..stats import ScoredGame, crosstable_rows, rating_rows
    from ..stats import rate as fit
    from ..stats.rating import MAX_GAMES, MAX_PLAYERS

    table_format_option(fmt)
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
    players: set[str] = set()
    try:
        for path in files:
            for g in read_games(path):
                white, black, score = g.tags.get("White", "?"), g.tags.get("Black", "?"), g.white_score
                if score is None:
                    continue
                # Bounded before the memory is taken: what a file can make the fit hold (and cost) is capped.
                if len(scored) == MAX_GAMES:
                    fail(f"{g.path}:{g.line}: more than {MAX_GAMES:,} finished games: rate at most that many at once")
                players.update((white, black))
                if len(players) > MAX_PLAYERS:
                    fail(f"{g.path}:{g.line}: more than {MAX_PLAYERS:,} players: rate at most that many at once")
                if max(len(white), len(black)) > _MAX_NAME:
                    fail(f"{g.path}:{g.line}: a player's name is longer than {_MAX_NAME} characters")
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
    echo_out(format_table(results_table(rating_rows(table), forfeits), fmt))
    if fmt not in ("csv", "json"):
        echo_out(MARGIN_NOTE)
        rated = sum(p.rating is not None for p in table.players)
        if rated > _CROSSTABLE_PLAYERS:
            echo_err(
                f"quarto-arena: the crosstable of {rated} players is left out (it is shown up to {_CROSSTABLE_PLAYERS})"
            )
            return
        typer.echo("")
        echo_out(format_table(crosstable_rows(table), fmt))


# --- report, serve ---------------------------------------------------------------------------------------------------


@app.command()
def report(
    directory: str = typer.Argument(..., metavar="DIR", help="A run directory (finished, or still being played)."),
) -> None:
    """Write DIR/report.html again from the run's journal: tables, plots and the game viewer in one offline file.

    Every run writes it when it ends; run this after `quarto-arena analyse DIR/games.pgn` to add the per-turn
    values, or to see a run that is still being played. Prints the report's path.
    """
    from ..tune.pages import is_tune_directory, write_tune_directory_report
    from ..web import WebError
    from ..web.report import write_directory_report

    write = write_tune_directory_report if is_tune_directory(Path(directory)) else write_directory_report
    try:
        path = write(Path(directory), warn=lambda text: echo_err(f"quarto-arena: warning: {text}"))
    except WebError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{directory}: cannot write the report: {e.strerror or e}")
    typer.echo(str(path))


@app.command()
def serve(
    directory: str = typer.Argument(..., metavar="DIR", help="A run directory (finished, or still being played)."),
    web: str = typer.Option(
        "127.0.0.1:8080", "--web", metavar="HOST:PORT", help="Where to serve the page (port 0: any free one)."
    ),
) -> None:
    """Serve the live page of a run directory, finished or still being written by another process, until Ctrl-C.

    Needs the web extra (pip install "quarto-arena[web]"). Stopping it with Ctrl-C or SIGTERM is its normal end
    (exit status 0).
    """
    import asyncio

    from ..web import WebError, parse_address, require_server

    try:
        address = parse_address(web)
        require_server()
        from ..web.server import serve_directory

        asyncio.run(
            serve_directory(
                Path(directory),
                address,
                announce=lambda url: echo_err(f"serving {directory} at {url} (Ctrl-C stops)"),
                warn=lambda text: echo_err(f"quarto-arena: warning: {text}"),
            )
        )
    except WebError as e:
        fail(str(e))


# --- analyse -------------------------------------------------------------------------------------------------------


@app.command()
def analyse(
    target: str = typer.Argument(
        ...,
        metavar="POSITION|FILE.pgn",
        help="A position string (quote it: it has a space) or startpos; or a PGN file.",
    ),
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    seconds: float | None = typer.Option(
        None, "--time", min=0.001, help="Bound each search to S seconds (the value may then be unproven)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: the value object, or the PGN summary."),
    from_empties: int = typer.Option(
        12, "--from", min=1, max=16, help="PGN: analyse from the first position with at most EMPTIES empty squares."
    ),
    out: str | None = typer.Option(
        None, "--out", help="PGN: directory for NAME.analysis.pgn and NAME.analysis.jsonl (default: the input's)."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", metavar="N", min=1, help="PGN: games analysed at once (processes)."),
    progress_every: str | None = typer.Option(
        None,
        "--progress-every",
        metavar="N|Ns",
        help="PGN, off a terminal: a status line every N games or seconds (default: every 60 s and every tenth).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="PGN: no progress line."),
) -> None:
    """Solve a position (value, turns to the end, every best turn), or find the mistakes in the games of a PGN file.

    The variant options apply to a position, and to games without a Variant tag.
    """
    import json
    from pathlib import Path

    v = variant_option(variant, attributes, claim)
    if target.lower().endswith(".pgn") or Path(target).is_file():
        _analyse_games(target, v, seconds, from_empties, out, as_json, jobs, progress_every, quiet)
        return
    from ..analysis import Analyser

    position = position_option(target, v)
    if position.is_over:
        fail("the game is over in this position: there is nothing to analyse")
    result = Analyser(seconds).position(position)
    value = result.value
    best = [str(t) for t in result.best]
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "value": None if value is None else value.verdict.value,
                    "turns": None if value is None else value.turns,
                    "best": best,
                    "proven": value is not None,
                    "nodes": result.nodes,
                    "seconds": round(result.seconds, 3),
                }
            )
        )
        return
    if value is None:
        typer.echo(f"unproven within {seconds:g} s")
        typer.echo(f"best turn found: {best[0]}")
    else:
        how = (
            "draw"
            if value.verdict.value == "draw"
            else f"{value.verdict.value} in {value.turns} turn{'s' if value.turns != 1 else ''}"
        )
        typer.echo(f"{how}, for the player to move")
        typer.echo(f"best: {' '.join(best)}")
    typer.echo(f"{result.nodes:,} nodes, {result.seconds:.2f} s")


class _AnalyseProgress:
    """``analyse FILE.pgn``'s status on standard error, as runs show theirs: redrawn in place on a terminal; else a
    line every so many games or seconds (by default every 60 s and at every tenth of the games)."""

    def __init__(self, total: int, every: Any, quiet: bool) -> None:
        import time

        self.total, self.every, self.quiet = total, every, quiet
        self.live = sys.stderr.isatty()
        self.done = self.mistakes = self._since = self._tenth = 0
        self.t0 = self._last = time.monotonic()

    def text(self) -> str:
        import time

        elapsed = time.monotonic() - self.t0
        rate = f", {self.done / elapsed:.2f} games/s" if elapsed > 0 else ""
        return f"analysed {self.done} of {self.total} games, {self.mistakes} mistakes{rate}, {elapsed:.0f} s"

    def game(self, analysis: Any) -> None:
        import time

        self.done += 1
        self.mistakes += sum(t.mistake is not None for t in analysis.analysed)
        if self.quiet:
            return
        if self.live:
            sys.stderr.write("\r\x1b[K" + self.text())
            sys.stderr.flush()
            return
        self._since += 1
        now = time.monotonic()
        e = self.every
        due = (e.games is not None and self._since >= e.games) or (
            e.seconds is not None and now - self._last >= e.seconds
        )
        tenth = 10 * self.done // self.total if self.total else 0
        if e.games is None and tenth > self._tenth and now - self._last >= 5.0:  # not for a file done in seconds
            due, self._tenth = True, tenth
        if due:
            echo_err(self.text())
            self._since, self._last = 0, now

    def close(self) -> None:
        if self.live and not self.quiet and self.done:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _analyse_games(
    target: str,
    variant: Variant,
    seconds: float | None,
    from_empties: int,
    out: str | None,
    as_json: bool,
    jobs: int = 1,
    progress_every: str | None = None,
    quiet: bool = False,
) -> None:
    """``analyse FILE.pgn``: annotated PGN and JSON Lines written, mistakes and the per-engine summary printed."""
    from pathlib import Path

    from ..analysis import Analyser, AnalysisError, GameAnalysis, summarize, summary_rows
    from ..output import ProgressEvery, format_table, parse_progress_every
    from ..pgn import PgnError, read_games

    path = Path(target)
    if not path.is_file():
        fail(f"{path}: no such file")
    every = ProgressEvery()
    if progress_every is not None:
        try:
            every = parse_progress_every(progress_every)
        except ValueError as e:
            fail(str(e))
    try:
        games = list(read_games(path))
    except PgnError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{path}: {e.strerror or e}")
    progress = _AnalyseProgress(len(games), every, quiet)

    def report(index: int, game: GameAnalysis) -> None:
        progress.game(game)
        for t in game.analysed:
            if t.mistake is not None and not as_json:
                echo_out(
                    f"game {index + 1} ({game.white} vs {game.black}): turn {t.ply + 1} {t.turn} by {t.player}, "
                    f"{t.empty} empty: {t.mistake} (was {t.before}, now {t.after})"
                )

    try:
        done = Analyser(seconds).file(
            path, variant, from_empties, None if out is None else Path(out), report, jobs=jobs, games=games
        )
    except (PgnError, AnalysisError) as e:
        progress.close()
        fail(str(e))
    except OSError as e:
        progress.close()
        fail(f"{e.filename or path}: {e.strerror or e}")
    progress.close()
    if not done.games:
        fail(f"{path}: no games")
    echo_out(format_table(summary_rows(summarize(done.games)), "json" if as_json else "simple"))
    typer.echo(f"wrote {done.pgn} and {done.jsonl}", err=True)
