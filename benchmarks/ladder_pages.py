"""The ladder's pages at scale: a database of many bots and games, made directly through the database module (not by
playing), then the time to render each page on the server.

    python benchmarks/ladder_pages.py [--bots 1000] [--games 1000000] [--db DIR] [--repeat 20]

1. The database (skipped when ``--db DIR`` already holds one): ``--bots`` bots (a fifth with two versions, one in
   twenty with three; a few names and authors in HTML), each meeting the 60 bots nearest in strength (a ladder's
   matchmaking pairs whoever is online; a strong field meets near equals), two games a pair with colours swapped,
   results drawn from the Elo model with draws, 3% of the losses by a forfeit (time, illegal turn, disconnect).
   Turns are real games (random legal play) drawn from a pool. Written by ``LadderDB.add_games`` in transactions
   of 10,000 games. Printed: the time and the bytes per game.
2. The fit: what the ladder's fitting process does when games were counted (:mod:`.refit`), timed, and stored (a
   bot's rating history is the stored fits).
3. The pages: the leaderboard (``/``), a bot's page (``/bot/NAME``, the median and worst over ``--repeat``
   bots picked at random), a game's page (``/game/ID``) and the API's answers, each rendered by the server's own
   function with nothing cached (the cost of the first request after a change), then the same pages fetched over
   HTTP on loopback from the real server (median of ``--repeat``). The goal: at most 50 ms to render the
   leaderboard and a bot page with 1,000 bots and 1,000,000 games.

Figures only, no assertions. The machine may be shared and noisy: the first line says what ran, the last the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from quarto_arena.arena.ladder import DB_NAME, LadderDB
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.protocol.rules import Outcome, Position

NEIGHBOURS = 60  # opponents of each bot: the nearest in strength
BATCH = 10_000  # games a transaction
FORFEITS = (Termination.TIME_FORFEIT, Termination.ILLEGAL_TURN, Termination.DISCONNECT)


def random_games(rng: random.Random, n: int) -> dict[Result, list[tuple[TurnRecord, ...]]]:
    """``n`` random legal games, by their result (the first player gives the first piece)."""
    out: dict[Result, list[tuple[TurnRecord, ...]]] = {
        r: [] for r in (Result.FIRST_WINS, Result.SECOND_WINS, Result.DRAW)
    }
    for _ in range(n):
        position, turns = Position.start(), []
        while not position.is_over:
            turn = rng.choice(position.legal_turns())
            position = position.apply(turn)
            turns.append(TurnRecord(str(turn), rng.randrange(1, 900)))
        if position.outcome is Outcome.DRAW:
            result = Result.DRAW
        else:
            result = Result.FIRST_WINS if len(turns) % 2 else Result.SECOND_WINS
        out[result].append(tuple(turns))
    return out


def make(directory: Path, bots: int, games: int, seed: int = 1) -> None:
    """Writes the ladder database of the docstring into ``directory``."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    db = LadderDB.open(directory / DB_NAME)
    names = [f"bot{i:04}" for i in range(bots)]
    names[7], names[11] = "<b>bold</b>", "<script>alert(1)</script>"
    strength = {n: rng.gauss(0, 300) for n in names}
    by_strength = sorted(names, key=strength.__getitem__)
    place = {n: i for i, n in enumerate(by_strength)}
    versions: dict[str, int] = {n: 1 + (rng.random() < 0.2) + (rng.random() < 0.05) for n in names}
    pool = random_games(rng, 600)
    began = time.monotonic()
    batch: list[tuple[GameRecord, int]] = []
    pair = 0
    while pair * 2 < games:
        a = rng.choice(names)
        i = place[a] + rng.choice([d for d in range(-NEIGHBOURS // 2, NEIGHBOURS // 2 + 1) if d])
        b = by_strength[min(max(i, 0), bots - 1)]
        if a == b:
            continue
        pair += 1
        # A bot's later versions come later: the version follows how far the ladder has got.
        share = pair * 2 / games
        va, vb = (1 + int(share * versions[n]) if versions[n] > 1 else 1 for n in (a, b))
        for first, second, vf, vs in ((a, b, va, vb), (b, a, vb, va)):
            expected = 1 / (1 + 10 ** ((strength[second] - strength[first]) / 400))
            x = rng.random()
            result = (
                Result.FIRST_WINS
                if x < expected * 0.85
                else Result.DRAW
                if x < expected * 0.85 + 0.15
                else Result.SECOND_WINS
            )
            termination, detail = Termination.NORMAL, ""
            if result is not Result.DRAW and rng.random() < 0.03:
                termination = rng.choice(FORFEITS)
                loser = second if result is Result.FIRST_WINS else first
                detail = f"{loser}: {termination.value}"
            engines = (
                EngineIdentity(f"{first.title()} {vf}.0", f"author of {first}", 1, f"remote:{first}"),
                EngineIdentity(f"{second.title()} {vs}.0", f"author of {second}", 1, f"remote:{second}"),
            )
            record = GameRecord(
                first,
                second,
                result,
                termination,
                detail,
                time_control="st=1",
                turns=rng.choice(pool[result]),
                started="2025-01-01T00:00:00Z",
                engines=engines,
            )
            batch.append((record, pair))
        if len(batch) >= BATCH:
            db.add_games(batch)
            batch.clear()
    if batch:
        db.add_games(batch)
    db.close()
    made = time.monotonic() - began
    size = sum(p.stat().st_size for p in directory.glob(f"{DB_NAME}*"))
    n = pair * 2
    print(f"database: {n:,} games between {bots:,} bots written in {made:.0f} s ({size / n:.0f} bytes a game)")


def timed(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Seconds of each of ``repeat`` calls: on the clock, and of this thread's CPU (what the page costs whatever
    else the machine runs)."""
    wall, cpu = [], []
    for _ in range(repeat):
        began, used = time.perf_counter(), time.thread_time()
        fn()
        wall.append(time.perf_counter() - began)
        cpu.append(time.thread_time() - used)
    return wall, cpu


def show(what: str, seconds: tuple[list[float], list[float]], size: int | None = None) -> None:
    wall, cpu = (sorted(1000 * s for s in times) for times in seconds)
    tail = f", {size / 1024:.0f} KB" if size is not None else ""
    print(
        f"  {what}: CPU median {statistics.median(cpu):.1f} ms, worst {cpu[-1]:.1f} ms; on the clock median"
        f" {statistics.median(wall):.1f} ms, worst {wall[-1]:.1f} ms (of {len(wall)}){tail}"
    )


async def pages(directory: Path, repeat: int) -> None:
    """Fits as the ladder does, then times each page's making and serving."""
    from quarto_arena.arena.ladder import render
    from quarto_arena.arena.ladder.pages import LadderPages, LadderView, api
    from quarto_arena.arena.ladder.refit import FitWorker
    from quarto_arena.arena.ladder.service import Ladder, LadderSettings

    path = directory / DB_NAME
    worker = FitWorker()
    try:
        began = time.perf_counter()
        fitted, ratings = await worker.fit(path, None)
        print(f"fit: {time.perf_counter() - began:.1f} s (the ladder's fitting process, read and fit, once a change)")
    finally:
        worker.close()
    db = LadderDB.open(path)
    try:
        db.save_fit(fitted.through, fitted.games, None, ratings)
    finally:
        db.close()
    ladder = Ladder(directory, LadderSettings())
    ladder.standings = fitted
    view = LadderView(ladder)
    await view.start()
    rng = random.Random(2)
    bots = sorted(view.bots)
    last = max(fitted.last, 1)
    print(f"pages made by the server's own functions, nothing cached ({len(bots):,} bots, {last:,} games):")

    def leaderboard() -> str:
        view.version += 1  # a change: the leaderboard is made again
        return render.leaderboard_html(view.leaderboard())

    show("leaderboard /", timed(leaderboard, repeat), len(leaderboard()))

    def bot() -> str:
        page = view.bot(rng.choice(bots), view.live_state())
        assert page is not None
        return render.bot_html(page)

    show("a bot's page /bot/NAME (a bot picked at random each time)", timed(bot, repeat), len(bot()))

    def game() -> str:
        found = view.game(rng.randint(1, last))
        assert found is not None
        return render.game_html(*found)

    show("a game's page /game/ID", timed(game, repeat), len(game()))

    def standings() -> str:
        view.version += 1
        return json.dumps(api(view.leaderboard()))

    show("/api/v1/standings", timed(standings, repeat), len(standings()))
    show("/api/v1/games?bot=NAME&limit=100", timed(lambda: view.games(0, 100, rng.choice(bots)), repeat))
    server = LadderPages(view, "127.0.0.1", 0)
    await server.start()
    try:
        targets = {"/": "", "/bot/NAME": "bot/", "/game/ID": "game/"}
        print("the same over HTTP on loopback (urllib; the leaderboard's page is made once per change):")
        for label, prefix in targets.items():
            seconds = []
            for _ in range(repeat):
                suffix = rng.choice(bots) if prefix == "bot/" else str(rng.randint(1, last)) if prefix else ""
                url = server.url + prefix + urllib.parse.quote(suffix, safe="")
                began = time.perf_counter()
                await asyncio.to_thread(fetch, url)
                seconds.append(time.perf_counter() - began)
            ms = sorted(1000 * s for s in seconds)
            print(f"  {label}: median {statistics.median(ms):.1f} ms, worst {ms[-1]:.1f} ms (of {len(ms)})")
    finally:
        await server.close()
        await view.close()


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:
        return bytes(r.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--db", metavar="DIR", help="the ladder's directory: made there when it has no database")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"benchmarks/ladder_pages.py on {os.cpu_count()} cores: {' '.join(sys.argv[1:]) or '(defaults)'}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(args.db) if args.db else Path(tmp) / "lad"
        if not (directory / DB_NAME).exists():
            make(directory, args.bots, args.games)
        asyncio.run(pages(directory, args.repeat))
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
