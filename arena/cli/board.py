"""``quarto-arena board``: the analysis board in the browser (arena/board/)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .app import app, echo_err, fail

if TYPE_CHECKING:
    from ..board.games import Loaded
    from ..engine import EngineConfig


@app.command()
def board(
    source: str | None = typer.Argument(
        None, metavar="[FILE.pgn|DIR]", help="Games to open: a PGN file, or a run directory (its journal)."
    ),
    engine: list[str] = typer.Option(
        [],
        "--engine",
        "-e",
        metavar="ENGINE",
        help="An engine to play and ask (repeatable): a built-in name, a command line, tcp://HOST:PORT, NAME=...",
    ),
    option: list[str] = typer.Option(
        [], "--option", "-o", metavar="[ENGINE:]ID=VALUE", help="Set a UQI option of an engine (repeatable)."
    ),
    web: str = typer.Option(
        "127.0.0.1:0",
        "--web",
        metavar="HOST:PORT",
        help="Where to serve the board: a loopback address (port 0: a free one, printed).",
    ),
    out: str | None = typer.Option(
        None,
        "--out",
        metavar="DIR",
        help="Where the games played are saved (default out/board-TIME, made with the first).",
    ),
) -> None:
    """An analysis board in the browser: play engines by hand, set up any position and see the solver's value of
    every turn, ask engines for their turn, open games from PGN files and run directories. Until Ctrl-C (exit 0).

    Needs the web extra (pip install "quarto-arena[web]"). The board serves this machine only.
    """
    import asyncio

    from ..board import BoardError
    from ..roster import RosterError, apply_options, resolve_engines
    from ..web import WebError, parse_address, require_server

    try:
        configs = apply_options(resolve_engines(engine), option) if engine else []
        if option and not engine:
            fail("--option needs an --engine to set it on")
        address = parse_address(web)
        require_server()
        from ..board.games import load_games
        from ..board.server import check_loopback

        check_loopback(address[0])
        games = None
        if source is not None:
            games = load_games(Path(source))
            for note in games.notes:
                echo_err(f"quarto-arena: warning: {note}")
        directory = Path(out) if out is not None else _default_directory()
        from .runs import fast_event_loop

        fast_event_loop()
        asyncio.run(_serve(configs, directory, address, games, source))
    except (RosterError, WebError, BoardError) as e:
        fail(str(e))


def _default_directory() -> Path:
    """``out/board-YYYYmmdd-HHMMSS`` (made with the first game; numbered when it exists)."""
    import datetime

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    base = Path("out") / f"board-{stamp}"
    candidate, k = base, 1
    while candidate.exists():
        k += 1
        candidate = base.with_name(f"{base.name}-{k}")
    return candidate


async def _serve(
    configs: list[EngineConfig], directory: Path, address: tuple[str, int], games: Loaded | None, source: str | None
) -> None:
    """Serves the board until Ctrl-C or SIGTERM; every engine it started is ended, whatever happens."""
    from ..board.server import serve_board
    from ..transport import shutdown

    def announce(url: str) -> None:
        names = ", ".join(c.name for c in configs) or "none"
        echo_err(f"board: {url} (engines: {names}; games saved in {directory}; Ctrl-C stops)")
        report = None if source is None else Path(source) / "report.html"
        if report is not None and report.is_file():
            echo_err(f"report with links to the board: {report.resolve().as_uri()}?board={url}")

    try:
        await serve_board(configs, directory, address, games=games, announce=announce)
    finally:
        await shutdown()
