"""``quarto-arena ladder run|standings|export``: a standing arena (:mod:`quarto_arena.arena.ladder`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .app import (
    AttributesOpt,
    ClaimOpt,
    FormatOpt,
    VariantOpt,
    app,
    echo_err,
    echo_out,
    fail,
    run_option,
    size_option,
    table_format_option,
)

if TYPE_CHECKING:
    from ..ladder.standings import Standings

AdjudicateOpt = run_option("adjudicate")
ConcurrencyOpt = run_option("concurrency")
DebugOpt = run_option("debug")
LogLimitOpt = run_option("log_limit")
OpeningsOpt = run_option("openings")
OptionOpt = run_option("option")
RandomOpeningsOpt = run_option("random_openings")
SeedOpt = run_option("seed")
TcOpt = run_option("tc")
TimeMarginOpt = run_option("timemargin")
WebOpt = run_option("web")

ladder_app = typer.Typer(
    name="ladder",
    help="A standing arena: bots connect in when they like, ratings kept in DIR/ladder.db.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(ladder_app)

AnchorOpt = typer.Option(None, "--anchor", metavar="NAME=ELO", help="Fix one rating (default: pool average 0).")


def _anchor(text: str | None) -> tuple[str, float] | None:
    if text is None:
        return None
    name, sep, elo = text.rpartition("=")
    try:
        value = float(elo)
    except ValueError:
        value = None
    if not sep or not name or value is None:
        fail(f"--anchor {text!r}: expected NAME=ELO, e.g. greedy=1500")
    return name, value


@ladder_app.command("run")
def run(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory (created, or continued)."),
    listen: str | None = typer.Option(
        None, "--listen", metavar="ENDPOINT", help="Where bots connect in: tcp://HOST:PORT (needs --keys)."
    ),
    keys: str | None = typer.Option(
        None, "--keys", metavar="DIR", help="Keys: arena.key_secret, and a NAME.key per bot (read as it changes)."
    ),
    house: list[str] = typer.Option(
        [], "--house", metavar="ENGINE", help="A local engine that is always online (repeatable)."
    ),
    tc: str = TcOpt,
    variant: str = VariantOpt,
    attributes: str = AttributesOpt,
    claim: str = ClaimOpt,
    openings: str | None = OpeningsOpt,
    random_openings: int | None = RandomOpeningsOpt,
    seed: int = SeedOpt,
    concurrency: int = ConcurrencyOpt,
    adjudicate: int | None = AdjudicateOpt,
    timemargin: int = TimeMarginOpt,
    option: list[str] = OptionOpt,
    log_limit: str = LogLimitOpt,
    debug: str | None = DebugOpt,
    web: str | None = WebOpt,
    anchor: str | None = AnchorOpt,
) -> None:
    """Run a ladder in DIR until stopped (SIGINT, SIGTERM, SIGHUP); the same command continues it."""
    import asyncio

    from ..errors import ArenaFault
    from ..ladder.service import Ladder, LadderError, LadderSettings
    from ..referee import GameSpec
    from ..roster import RosterError, apply_options, resolve_engines
    from ..schedule import STARTPOS, OpeningBook, ScheduleError, load_openings
    from ..timecontrol import TimeControl
    from .app import variant_option

    if listen is None and not house:
        fail("a ladder needs players: --listen ENDPOINT --keys DIR for bots that connect in, or --house ENGINE")
    if listen is not None and keys is None:
        fail("--listen on a ladder needs --keys DIR: a bot is let in by its public key")
    if keys is not None and listen is None:
        fail("--keys is for bots that connect in: give --listen tcp://HOST:PORT too")
    if concurrency < 1:
        fail(f"-j must be at least 1, not {concurrency}")
    the_variant = variant_option(variant, attributes, claim)
    try:
        control = TimeControl.parse(tc)
    except ValueError as e:
        fail(str(e))
    try:
        configs = resolve_engines(house) if house else []
        configs = apply_options(configs, option) if configs else []
        if openings is not None:
            book = OpeningBook(
                tuple(load_openings(Path(openings), the_variant)), variant=the_variant, source=str(openings)
            )
        else:
            turns = random_openings or 0
            book = OpeningBook(
                random_turns=turns, seed=seed, variant=the_variant, source=f"random {turns}" if turns else STARTPOS
            )
        spec = GameSpec(variant=the_variant, margin_ms=timemargin, adjudicate=adjudicate)
    except (RosterError, ScheduleError, ValueError) as e:
        fail(str(e))
    if listen is None and len(configs) < 2:
        fail("a ladder of house engines only needs two of them at least (or --listen for bots that connect in)")
    if any(c.remote is not None for c in configs):
        fail("--house engines run here; bots that connect in need no --house (their key lets them in)")
    address = None
    if web is not None:
        from ..web import WebError, parse_address, require_server

        try:
            address = parse_address(web)
            require_server()
        except WebError as e:
            fail(str(e))
    anchored = _anchor(anchor)
    transcript = None
    if debug is not None:
        from .runs import debug_option

        transcript = debug_option(Path(debug))
    settings = LadderSettings(
        house=tuple(configs),
        endpoint=listen,
        keys=None if keys is None else Path(keys).resolve(),
        concurrency=concurrency,
        time_control=control,
        spec=spec,
        book=book,
        log_limit=size_option(log_limit),
    )
    _show_log()
    ladder = Ladder(Path(directory), settings, on_event=_printer(), transcript=transcript)
    house_names = ", ".join(c.name for c in configs) or "none"
    where = f"; bots connect to {listen} with a key in {keys}" if listen else ""
    echo_err(f"Ladder in {directory}: house engines {house_names}{where}; {concurrency} games at once, --tc {tc}")
    try:
        from .runs import fast_event_loop

        fast_event_loop()
        signum = asyncio.run(_serve(ladder, address, anchored))
    except LadderError as e:
        fail(str(e))
    except ArenaFault as e:
        fail(f"{e}; the ladder stopped (every counted game is safe): continue with the same command", int(e.status))
    except Exception as e:
        from ..web import WebError

        if not isinstance(e, WebError):
            raise
        fail(f"{e}; the ladder in {directory} has not started")
    except OSError as e:
        fail(f"{directory}: {e.strerror or e}")
    echo_err(f"ladder stopped: {ladder.counted} games counted, {ladder.abandoned} abandoned in flight (not counted)")
    if signum is not None:
        import signal

        fail(f"stopped by {signal.Signals(signum).name}; continue with the same command", 128 + signum)


def _show_log() -> None:
    """The server's and the ladder's log lines on stderr (connections, refusals, cuts)."""
    import logging

    from quarto_arena.protocol.safelog import SafeFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter("quarto-arena: %(message)s"))
    for name in ("quarto_arena.arena.server", "quarto_arena.arena.ladder"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def _printer() -> Any:
    from ..ladder.service import GameCounted
    from ..output import game_comment
    from ..run import Notice

    def on_event(e: object) -> None:
        if isinstance(e, GameCounted):
            r = e.record
            echo_err(f"game {r.game_id}: {r.first} - {r.second} {r.result.value} ({game_comment(r)})")
        elif isinstance(e, Notice):
            echo_err(f"quarto-arena: {e.text}")

    return on_event


async def _serve(ladder: Any, address: tuple[str, int] | None, anchor: tuple[str, float] | None) -> int | None:
    """Plays until a signal (returned) with the pages up when asked; the engines' processes all reaped."""
    import asyncio
    import signal

    from ..transport import kill_all, shutdown

    stop = asyncio.Event()
    caught: list[int] = []

    def on_signal(signum: int) -> None:
        if stop.is_set():
            kill_all()
        caught.append(signum)
        stop.set()

    loop = asyncio.get_running_loop()
    handled = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    for signum in handled:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        if address is None:
            await ladder.run(stop)
        else:
            from ..ladder.pages import serve_ladder

            await serve_ladder(ladder, stop, address, anchor, announce=lambda url: echo_err(f"ladder page: {url}"))
    finally:
        await shutdown()  # a second signal still hurries it
        for signum in handled:
            loop.remove_signal_handler(signum)
            # Not the default action (a second signal now would kill the process and lose its 128+N status), nor a
            # Python handler (finalization puts the default back): what is left is one line and the exit.
            signal.signal(signum, signal.SIG_IGN)
    return caught[0] if caught else None


def _open(directory: str) -> Any:
    from ..ladder import DB_NAME, LadderDB, LadderDBError

    try:
        return LadderDB.open(Path(directory) / DB_NAME, create=False)
    except LadderDBError as e:
        fail(str(e))


def read_standings(directory: str, anchor: tuple[str, float] | None, by_version: bool) -> Standings:
    """The standings of the ladder in ``directory`` (a usage error for one that is not there, or a bad anchor)."""
    from ..ladder import LadderDBError, fit
    from ..stats import RatingError

    db = _open(directory)
    try:
        results, bots = db.tallies(), db.bots()
    except LadderDBError as e:
        fail(str(e))
    finally:
        db.close()
    try:
        return fit(results, bots, anchor=anchor, by_version=by_version)
    except RatingError as e:
        fail(str(e))


@ladder_app.command("standings")
def standings(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    fmt: str = FormatOpt,
    by_version: bool = typer.Option(False, "--by-version", help="Every version of each bot, not the latest only."),
    anchor: str | None = AnchorOpt,
) -> None:
    """Print the ladder's table from its database (while it runs or not)."""
    from ..output import format_table
    from ..stats import TableRows

    table_format_option(fmt)
    table = read_standings(directory, _anchor(anchor), by_version)
    headers = ("rank", "player", "bot", "version", "id_name", "rating", "margin", "games", "points", "score", "house")
    rows = tuple(
        (s.rank, s.player, s.bot, s.version, s.id_name, s.rating, s.margin, s.games, s.points, s.score, s.house)
        for s in table.lines
    )
    echo_out(format_table(TableRows(headers, rows), fmt))


@ladder_app.command("export")
def export(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    pgn: str = typer.Option(..., "--pgn", metavar="FILE", help="Write every counted game as PGN here."),
    jsonl: str | None = typer.Option(None, "--jsonl", metavar="FILE", help="And as JSON Lines here."),
) -> None:
    """Write every counted game (players named by version, as the standings name them; `rate FILE` agrees)."""
    import contextlib
    import json
    from dataclasses import replace

    from ..ladder import LadderDBError, version_label
    from ..ladder.views import PUBLIC_SITE, public_record
    from ..pgn import pgn_text

    db = _open(directory)
    n = 0
    try:
        versions = {b.name: len(b.versions) for b in db.bots()}
        for path in (pgn, jsonl):
            if path is not None:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        with (
            open(pgn, "w", encoding="utf-8") as p,
            open(jsonl, "w", encoding="utf-8") if jsonl else contextlib.nullcontext() as j,
        ):
            for record, fv, sv in db.games():
                named = replace(
                    public_record(record),  # no command line, option or path of this host
                    first=version_label(record.first, fv, versions.get(record.first, 1)),
                    second=version_label(record.second, sv, versions.get(record.second, 1)),
                )
                p.write(("\n" if n else "") + pgn_text(named, "quarto-arena ladder", PUBLIC_SITE))
                if j is not None:
                    j.write(json.dumps(named.to_dict()) + "\n")
                n += 1
    except LadderDBError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{e.filename or pgn}: {e.strerror or e}")
    finally:
        db.close()
    echo_err(f"{n} games written")
