"""``quarto-arena ladder run|standings|export|check|backup|ban|unban|retire``: a standing arena
(:mod:`quarto_arena.arena.ladder`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .app import FormatOpt, app, echo_err, echo_out, fail, leave, size_option, table_format_option
from .runs import run_options

if TYPE_CHECKING:
    from ..ladder.standings import Standings
    from ..options import RunOptions

ladder_app = typer.Typer(
    name="ladder",
    help="A standing arena: bots connect in when they like, ratings kept in DIR/ladder.db.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(ladder_app)

AnchorOpt = typer.Option(
    None, "--anchor", metavar="NAME=ELO", help="Fix one rating (default: the ladder's: its first house engine at 0)."
)


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


def _run(ctx: typer.Context, o: RunOptions, own: dict[str, Any]) -> None:
    """Runs the ladder of ``ladder run``: the options it shares with the run commands in ``o`` (read as a run reads
    them), its own in ``own``."""
    from ..ladder.service import Ladder, LadderSettings
    from ..roster import apply_options, resolve_engines
    from ..settings import game_settings

    directory: str = own["directory"]
    house: list[str] = own["house"]
    if o.listen is None and not house:
        fail("a ladder needs players: --listen ENDPOINT --keys DIR for bots that connect in, or --house ENGINE")
    if o.listen is not None and o.keys is None:
        fail("--listen on a ladder needs --keys DIR: a bot is let in by its public key")
    if o.keys is not None and o.listen is None:
        fail("--keys is for bots that connect in: give --listen tcp://HOST:PORT too")
    if own["open_"] and o.listen is None:
        fail("--open lets bots join: give --listen tcp://HOST:PORT --keys DIR too")
    if o.concurrency < 1:
        fail(f"--concurrency must be at least 1, not {o.concurrency}")
    try:
        game = game_settings(o)
        configs = resolve_engines(house) if house else []
        configs = apply_options(configs, o.option) if configs else []
    except ValueError as e:
        fail(str(e))
    if o.listen is None and len(configs) < 2:
        fail("a ladder of house engines only needs two of them at least (or --listen for bots that connect in)")
    if any(c.remote is not None for c in configs):
        fail("--house engines run here; bots that connect in need no --house (their key lets them in)")
    address = None
    if o.web is not None:
        from ..web import WebError, parse_address, require_server

        try:
            address = parse_address(o.web)
            require_server()
        except WebError as e:
            fail(str(e))
    anchored = _anchor(own["anchor"])
    transcript = None
    if o.debug is not None:
        from .runs import debug_option

        transcript = debug_option(Path(o.debug))
    settings = LadderSettings(
        house=tuple(configs),
        endpoint=o.listen,
        keys=None if o.keys is None else Path(o.keys).resolve(),
        open=own["open_"],
        anchor=anchored,
        concurrency=o.concurrency,
        game=game,
        log_limit=size_option(o.log_limit),
    )
    ladder = Ladder(Path(directory), settings, on_event=_printer(), transcript=transcript)
    house_names = ", ".join(c.name for c in configs) or "none"
    where = f"; bots connect to {o.listen} with a key in {o.keys}" if o.listen else ""
    if own["open_"]:
        where += " or any key of their own (--open)"
    at_once = f"{o.concurrency} game{'' if o.concurrency == 1 else 's'} at once"
    header = f"Ladder in {directory}: house engines {house_names}{where}; {at_once}, --tc {o.tc}"
    logs = _show_log(o.quiet, own["log"])
    try:
        signum = _run_ladder(ladder, address, directory, header)
    finally:
        logs.close()
    tally = f"{ladder.counted} games counted, {ladder.abandoned} abandoned in flight (not counted)"
    if signum is None:
        echo_err(f"ladder stopped: {tally}")
        return
    import signal

    leave(f"ladder stopped by {signal.Signals(signum).name}: {tally}; continue with the same command", 128 + signum)


@ladder_app.command("run")
@run_options("ladder", _run)
def run(
    ctx: typer.Context,
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory (created, or continued)."),
    open_: bool = typer.Option(
        False, "--open", help="Any key may join, registering the name it says (the keys directory's names reserved)."
    ),
    house: list[str] = typer.Option(
        [], "--house", metavar="ENGINE", help="A local engine that is always online (repeatable)."
    ),
    anchor: str | None = AnchorOpt,
    log: str | None = typer.Option(
        None, "--log", metavar="FILE", help="The ladder's log in FILE, rotated at 10 MB (default: stderr)."
    ),
) -> None:
    """Run a ladder in DIR until stopped (SIGINT, SIGTERM, SIGHUP); the same command continues it."""


def _run_ladder(ladder: Any, address: tuple[str, int] | None, directory: str, header: str) -> int | None:
    """Runs the ladder until a signal (returned), saying ``header`` once it has started; every error a line and its
    status."""
    import asyncio

    from ..errors import ArenaFault
    from ..ladder.service import LadderError
    from ..web import WebError
    from .runs import fast_event_loop

    try:
        fast_event_loop()
        return asyncio.run(_serve(ladder, address, header))
    except LadderError as e:
        fail(str(e))
    except ArenaFault as e:
        fail(f"{e}; the ladder stopped (every counted game is safe): continue with the same command", int(e.status))
    except WebError as e:
        fail(f"{e}; the ladder in {directory} has not started")
    except OSError as e:
        fail(f"{directory}: {e.strerror or e}")


_LINES = "quarto_arena.arena.cli.ladder"  # the logger of the games counted and the ladder's notices

# The ladder's routine lines (one a game or a connection), which -q counts in its summary instead of showing them.
_ROUTINE = {
    "game %s: %s - %s %s (%s)": "games counted",
    "server: %s connected with %d slot%s": "connections",
    "server: %s disconnected": "disconnections",
}


def _show_log(quiet: bool, path: str | None) -> Any:
    """The ladder's lines (each game counted, the server's connections, refusals and cuts) on stderr or in ``path``
    (rotated), routine ones summed up every 10 minutes with ``quiet``."""
    from quarto_arena.protocol.safelog import Quiet, service_log

    try:
        return service_log(
            ("quarto_arena.arena.server", "quarto_arena.arena.ladder", _LINES),
            "quarto-arena: %(message)s" if path is None else "%(asctime)s quarto-arena: %(message)s",
            quiet=Quiet(_ROUTINE) if quiet else None,
            path=path,
        )
    except OSError as e:
        fail(f"--log {path}: {e.strerror or e}")


def _printer() -> Any:
    import logging

    from ..ladder.service import GameCounted
    from ..output import game_comment
    from ..run import Notice

    lines = logging.getLogger(_LINES)

    def on_event(e: object) -> None:
        if isinstance(e, GameCounted):
            r = e.record
            lines.info("game %s: %s - %s %s (%s)", r.game_id, r.first, r.second, r.result.value, game_comment(r))
        elif isinstance(e, Notice):
            lines.info("%s", e.text)

    return on_event


async def _serve(ladder: Any, address: tuple[str, int] | None, header: str) -> int | None:
    """Plays until a signal (returned) with the pages up when asked, ``header`` said once the ladder has started
    (none for one that does not start); the engines' processes all reaped."""
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

    async def started() -> None:
        await ladder.ready.wait()
        echo_err(header)

    announcer = asyncio.create_task(started())
    try:
        if address is None:
            await ladder.run(stop)
        else:
            from ..ladder.pages import serve_ladder

            await serve_ladder(ladder, stop, address, announce=lambda url: echo_err(f"ladder page: {url}"))
    finally:
        announcer.cancel()
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


def read_standings(
    directory: str,
    anchor: tuple[str, float] | None,
    by_version: bool,
    everything: bool = False,
    refit: bool = False,
) -> Standings:
    """The standings of the ladder in ``directory`` (a usage error for one that is not there, or a bad anchor)."""
    from dataclasses import replace

    from ..ladder import LadderDBError, standings
    from ..ladder.standings import fresh_fit
    from ..stats import RatingError

    db = _open(directory)
    try:
        with db.snapshot():  # the tallies, when a fit needs them, of the same moment as the rest
            state = db.state(tallies=False)
            fresh = fresh_fit(state, anchor, refit)
            if fresh:
                tallies, damaged = db.tallies()
                state = replace(state, tallies=tuple(tallies), damaged=state.damaged + tuple(damaged))
    except LadderDBError as e:
        fail(str(e))
    finally:
        db.close()
    try:
        return standings(state, anchor, by_version=by_version, everything=everything, fresh=fresh)
    except RatingError as e:
        fail(str(e))


@ladder_app.command("standings")
def standings(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    fmt: str = FormatOpt,
    by_version: bool = typer.Option(False, "--by-version", help="Every version of each bot, not the latest only."),
    everything: bool = typer.Option(False, "--all", help="Retired versions and banned bots too."),
    anchor: str | None = AnchorOpt,
    refit: bool = typer.Option(False, "--refit", help="Fit now, even where the ladder's stored fit would do."),
) -> None:
    """Print the ladder's table from its database (while it runs or not)."""
    from ..output import format_table
    from ..stats import TableRows

    table_format_option(fmt)
    table = read_standings(directory, _anchor(anchor), by_version, everything, refit)
    if fmt == "json":
        import json

        echo_out(json.dumps([s.as_dict() for s in table.lines], indent=2))
    else:
        headers: tuple[str, ...] = ("rank", "player", "bot", "version", "id_name", "rating", "margin", "games")
        headers += ("points", "score", "opponents", "provisional", "forfeits", "dodges", "house")
        rows = tuple(
            (s.rank, s.player, s.bot, s.version, s.id_name, s.rating, s.margin, s.games, s.points, s.score)
            + (s.opponents, s.provisional, _forfeits(s.forfeits), s.dodges, s.house)
            + (("banned" if s.banned else "retired" if s.retired else "",) if everything else ())
            for s in table.lines
        )
        echo_out(format_table(TableRows(headers + (("status",) if everything else ()), rows), fmt))
    if not table.fresh and table.through < table.last:
        echo_err(
            f"quarto-arena: ratings of the ladder's last fit, through game {table.through} of {table.last}"
            " (games, points and forfeits are counted to the last; --refit fits them now)"
        )
    if table.damaged:
        echo_err(
            f"quarto-arena: {len(table.damaged)} tallies or totals fail their checksum and are left out:"
            f" quarto-arena ladder check {directory} --repair counts them again from the games"
        )


def _forfeits(by: dict[str, int] | Any) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(by.items())) if by else ""


@ladder_app.command("export")
def export(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    pgn: str = typer.Option(..., "--pgn", metavar="FILE", help="Write every counted game as PGN here."),
    jsonl: str | None = typer.Option(None, "--jsonl", metavar="FILE", help="And as JSON Lines here."),
) -> None:
    """Write every counted game (players named as the fit names them; `rate FILE` fits the same players)."""
    import contextlib
    import json
    from dataclasses import replace

    from ..ladder import LadderDBError, labels
    from ..ladder.views import PUBLIC_SITE, public_record
    from ..pgn import pgn_text

    db = _open(directory)
    n = 0
    damaged = 0
    try:
        for target in (pgn, jsonl):
            if target is not None:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
        with db.snapshot():  # one snapshot: the games and the versions' names agree
            named = labels(db.bots())
            with (
                open(pgn, "w", encoding="utf-8") as p,
                open(jsonl, "w", encoding="utf-8") if jsonl else contextlib.nullcontext() as j,
            ):
                for record, fv, sv, ok in db.games():
                    if not ok:
                        damaged += 1
                        continue
                    record = replace(
                        public_record(record),  # no command line, option or path of this host
                        first=named[(record.first, fv)],
                        second=named[(record.second, sv)],
                    )
                    p.write(("\n" if n else "") + pgn_text(record, "quarto-arena ladder", PUBLIC_SITE))
                    if j is not None:
                        j.write(json.dumps(record.to_dict()) + "\n")
                    n += 1
    except LadderDBError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{e.filename or pgn}: {e.strerror or e}")
    finally:
        db.close()
    echo_err(f"{n} games written")
    if damaged:
        echo_err(
            f"quarto-arena: {damaged} games fail their checksum (changed since they were counted) and are left out:"
            f" quarto-arena ladder check {directory}"
        )


@ladder_app.command("check")
def check(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    repair: bool = typer.Option(
        False, "--repair", help="Count the tallies again from the games that verify (the ladder must be stopped)."
    ),
) -> None:
    """Check the whole database: SQLite's integrity, every game's checksum, every tally (exit 1 when damaged)."""
    from ..ladder import DirectoryLock, LadderDBError

    lock = DirectoryLock(Path(directory))
    db = _open(directory)
    try:
        if repair:
            lock.acquire()
        report = db.check(repair=repair)
    except LadderDBError as e:
        fail(str(e))
    finally:
        db.close()
        lock.release()
    for line in report.integrity if report.integrity != ("ok",) else ():
        echo_err(f"quarto-arena: {db.path}: {line}")
    for number in report.bad_games[:20]:
        echo_err(f"quarto-arena: game {number}: changed since it was counted (its checksum fails): not counted")
    for line in report.bad_tallies[:20]:
        echo_err(f"quarto-arena: {line}")
    if report.ok:
        echo_err(f"{db.path}: ok ({report.games} games, every checksum and tally holds)")
        return
    what = f"{len(report.bad_games)} games changed, {len(report.bad_tallies)} tallies or totals wrong"
    if report.integrity != ("ok",):
        what += ", SQLite's integrity check fails (restore a backup)"
    done = "; the tallies are counted again from the games that verify" if repair and report.bad_tallies else ""
    if repair and report.bad_tallies and not report.bad_games and report.integrity == ("ok",):
        echo_err(f"{db.path}: repaired ({what}{done})")
        return
    from ..errors import ExitStatus

    fail(f"{db.path}: damaged: {what}{done}", ExitStatus.VERDICT)


@ladder_app.command("backup")
def backup(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    file: str = typer.Argument(..., metavar="FILE", help="Where the copy goes (a ladder started on it continues)."),
) -> None:
    """Copy the database, consistent while the ladder runs (SQLite's online backup)."""
    from ..ladder import LadderDBError

    target = Path(file)
    if target.is_dir():
        target = target / "ladder.db"
    db = _open(directory)
    try:
        db.backup(target)
        games = db.count()
    except LadderDBError as e:
        fail(str(e))
    finally:
        db.close()
    echo_err(f"{target}: a copy of {games} games (start a ladder on its directory to continue from it)")


def _moderate(directory: str, action: str, name: str, reason: str = "") -> None:
    from ..ladder import LadderDBError

    db = _open(directory)
    try:
        if action == "ban":
            done = db.ban(name, reason or "banned by the operator")
        elif action == "unban":
            done = db.unban(name)
        else:
            bot, _, number = name.rpartition("#")
            if not bot or not number.isdigit():
                fail(f"{name!r}: give a version as NAME#N (ladder standings DIR --by-version shows them)")
            done = db.retire(bot, int(number))
        known = sorted(b.name for b in db.bots()) if not done else []
    except LadderDBError as e:
        fail(str(e))
    finally:
        db.close()
    if not done:
        shown = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "")
        what = "version" if action == "retire" else "bot"
        fail(f"no {what} {name!r} on the ladder in {directory} (its bots: {shown or 'none'})")


@ladder_app.command("ban")
def ban(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    name: str = typer.Argument(..., metavar="NAME", help="The bot."),
    reason: str = typer.Option("", "--reason", metavar="TEXT", help="What the bot is told, and the journal keeps."),
) -> None:
    """Ban a bot: cut within a second on a running ladder, its games in flight abandoned, its rating hidden."""
    _moderate(directory, "ban", name, reason)
    echo_err(
        f"{name} is banned{f' ({reason})' if reason else ''}: its games stay; ladder unban {directory} {name} undoes it"
    )


@ladder_app.command("unban")
def unban(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    name: str = typer.Argument(..., metavar="NAME", help="The bot."),
) -> None:
    """Lift a bot's ban."""
    _moderate(directory, "unban", name)
    echo_err(f"{name} may play again")


@ladder_app.command("retire")
def retire(
    directory: str = typer.Argument(..., metavar="DIR", help="The ladder's directory."),
    version: str = typer.Argument(..., metavar="NAME#N", help="The version (ladder standings --by-version)."),
) -> None:
    """Take a version off the board (its games stay, rated with the bot's other retired versions)."""
    _moderate(directory, "retire", version)
    echo_err(f"{version} is retired: off the board, its games kept")
