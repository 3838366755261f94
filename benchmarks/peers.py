#!/usr/bin/env python3
"""The arena side by side with its peers: the same instant engines, games of the same length, interleaved rounds.

Each arena runs a match between two copies of an instant engine of our own (benchmarks/peers/, compiled here with
cc), with its default flags as a user runs it (its PGN, and the time control st=1 the instant engines ignore; no
opening book, no move limit, no -q): ``instant_uci.c`` for the chess arenas, a line that black mates on the 16th
ply; ``instant_uqi.c`` for quarto-arena, a board filled without a group from whatever opening (quarto-arena's
default is 2 random book turns), a draw on the 17th turn. Every run's PGN is read back: a run whose games are not
all there, of that length, ending so, or whose engines answered another number of searches than the PGN's plies
less its book turns, is refused (no figure). Every arena runs in a fresh temporary directory. The peers are tools
from outside the project: give their binaries' paths (``--fastchess``, ``--cutechess``); a peer not given is
skipped (cutechess-cli is also looked for on PATH).

Figures are per ply searched (a book turn is no search). The headline is the whole run: the wall time to the exit
(what a user waits; fastchess checks once a second whether its games are done, so its exit comes at a whole second
plus about 0.2 s from its start) and the arena's own CPU (its CPU and its reaped children's, from wait4, less what
the engines report they used: each engine appends its own CPU to a log at exit). Second, the marginal figures: every
arena also plays a quarter of ``--games``, and the difference is divided by the difference in plies, so that fixed
costs (start-up, the end of a run) do not count; there fastchess's wall stops at its last game's record. Rounds are
interleaved (every arena once, then again) so a busy machine slows them alike; the load is printed per run; the
tables give each figure's median over the rounds, and each other arena's figure as a ratio to fastchess's at the
same concurrency in the same round (median of the rounds).

    python benchmarks/peers.py [--fastchess PATH] [--cutechess PATH] [--games 2000] [--rounds 5] [--concurrency 1,2,4]
                               [--arena "quarto-arena"]
    python benchmarks/peers.py --instructions [--games 800]

``--instructions`` counts instead what load does not move, for quarto-arena alone: the user-space instructions its
own process executes per ply under valgrind's callgrind (engines run natively), marginal as above, for each of its
command lines (play and tournament at each concurrency): the same command as the CPU figure, with its journal,
PGN, JSON Lines and report.html, on the event loop the command picks (uvloop where installed). The kernel's share
(pipe writes, wake-ups, fsync) is not in it. Side by side with an older revision: ``python benchmarks/ab.py --base
REV --script benchmarks/peers.py -- --instructions``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import floors
from cbuild import compile_c

HERE = Path(__file__).resolve().parent / "peers"
PLIES = {"uci": 16, "uqi": 17}
"""Plies (turns) a game lasts, book turns included: the UCI line is mated on the 16th; a Quarto board fills on the
17th turn (a give, then 16 placements)."""


@dataclass(frozen=True, slots=True)
class Arena:
    """One way to run the match: a name, a concurrency, and the command line given the engine and the games."""

    name: str
    concurrency: int
    command: Callable[[Path, int, Path], list[str]]
    """(engine binary, games, run directory) -> argv."""
    engine: str
    """uci or uqi."""
    pgn: Callable[[Path], Path]
    """(run directory) -> the PGN the arena wrote, whose games are counted and checked."""
    idles: Callable[[Path], Path] | None = None
    """For an arena that idles after its games before it exits: (run directory) -> the file whose last write ends
    its games (the wall time stops there)."""


@dataclass(frozen=True, slots=True)
class Figures:
    """What one run cost, per ply searched (a book turn is no search)."""

    wall_us: float
    cpu_us: float
    trips: float
    plies: int
    whole_wall_us: float = 0.0
    """To the exit, even for an arena that idles after its games: what a user waits."""


RESULT = {"uci": "0-1", "uqi": "1/2-1/2"}
"""How every game ends: the UCI line is mated by black, the UQI board fills without a group."""


def check_games(pgn: Path, games: int, kind: str, searches: int, name: str) -> None:
    """Refuses (exit) a run whose PGN does not hold ``games`` games of PLIES[kind] plies each, ending as RESULT says, or
    whose engines answered another number of searches than its PGN's plies less its book turns."""
    if not pgn.exists():
        sys.exit(f"{name}: wrote no {pgn}")
    text = pgn.read_text()
    movetexts = re.findall(r"\n\n(?!\[)(.+?)(?=\n\n\[|\s*\Z)", text, flags=re.DOTALL)
    if len(movetexts) != games:
        sys.exit(f"{name}: {len(movetexts)} games in {pgn}, not {games}")
    played = 0
    for movetext in movetexts:
        book = len(re.findall(r"\{book\}", movetext))
        bare = re.sub(r"\{[^}]*\}", " ", movetext).split()
        result = bare[-1]
        plies = [t for t in bare[:-1] if not re.fullmatch(r"\d+\.(\.\.)?", t)]
        if len(plies) != PLIES[kind] or result != RESULT[kind]:
            sys.exit(
                f"{name}: a game of {len(plies)} plies ending {result}, "
                f"not {PLIES[kind]} ending {RESULT[kind]}:\n{movetext}"
            )
        played += PLIES[kind] - book
    if searches != played:
        sys.exit(f"{name}: the engines answered {searches} searches, the PGN shows {played} plies searched")


def build(directory: Path) -> dict[str, Path]:
    """The two instant engines, compiled."""
    return {kind: compile_c(HERE / f"instant_{kind}.c", directory) for kind in ("uci", "uqi")}


def fastchess(path: str, concurrency: int) -> Arena:
    def command(engine: Path, games: int, run: Path) -> list[str]:
        return [
            path,
            *("-engine", f"cmd={engine}", "name=a", "-engine", f"cmd={engine}", "name=b"),
            *("-each", "proto=uci", "st=1"),
            *("-rounds", str(games // 2), "-games", "2", "-concurrency", str(concurrency)),
            # fastchess refuses more games at once than the machine has CPUs without this
            *(["-force-concurrency"] if concurrency > (os.cpu_count() or 1) else []),
            *("-pgnout", f"file={run / 'games.pgn'}"),
            *("-config", f"outname={run / 'config.json'}"),
        ]

    pgn = lambda run: run / "games.pgn"  # noqa: E731
    return Arena(f"fastchess c={concurrency}", concurrency, command, "uci", pgn=pgn, idles=pgn)


def cutechess(path: str, concurrency: int) -> Arena:
    def command(engine: Path, games: int, run: Path) -> list[str]:
        return [
            path,
            *("-engine", f"cmd={engine}", "name=a", "-engine", f"cmd={engine}", "name=b"),
            *("-each", "proto=uci", "st=1"),
            *("-rounds", str(games // 2), "-games", "2", "-concurrency", str(concurrency)),
            *("-pgnout", str(run / "games.pgn")),
        ]

    return Arena(f"cutechess-cli c={concurrency}", concurrency, command, "uci", pgn=lambda run: run / "games.pgn")


def quarto(arena: list[str], kind: str, concurrency: int) -> Arena:
    def command(engine: Path, games: int, run: Path) -> list[str]:
        head = [*arena, kind, f"a={engine}", f"b={engine}"]
        if kind == "tournament":
            head += ["--rounds", str(games // 2), "-j", str(concurrency)]
        else:
            head += ["--games", str(games)]
        return [*head, "--tc", "st=1", "--out", str(run / "run")]

    return Arena(
        f"quarto-arena {kind} c={concurrency}", concurrency, command, "uqi", pgn=lambda run: run / "run" / "games.pgn"
    )


def run(arena: Arena, engine: Path, games: int, scratch: Path) -> Figures:
    """One match: wall time (to the exit, or to the last game of an arena that idles), the arena's own CPU (engines'
    subtracted), round trips and plies."""
    directory = Path(tempfile.mkdtemp(dir=scratch))
    log = directory / "engines.log"
    env = {**os.environ, "PEERS_LOG": str(log)}
    argv = arena.command(engine, games, directory)
    started, started_ns = time.perf_counter(), time.time_ns()  # the second: the clock that stamps a file's writes
    out = (directory / "stdout").open("wb")  # fastchess says why it failed there, not on stderr
    child = subprocess.Popen(argv, cwd=directory, env=env, stdout=out, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = whole = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.stderr is not None
    errors = child.stderr.read().decode(errors="replace").strip()
    child.stderr.close()
    out.close()
    if child.returncode != 0:
        said = (directory / "stdout").read_text(errors="replace").strip()
        sys.exit(f"{arena.name} failed ({child.returncode}): {shlex.join(argv)}\n{errors[-2000:]}\n{said[-2000:]}")
    if arena.idles is not None:
        ended = arena.idles(directory)
        if not ended.exists():
            sys.exit(f"{arena.name}: wrote no {ended}")
        wall = (ended.stat().st_mtime_ns - started_ns) / 1e9
    rows = [[int(x) for x in line.split()] for line in log.read_text().splitlines() if line.strip()]
    if not rows:
        sys.exit(f"{arena.name}: no engine logged its cost")
    engines_cpu = sum(r[0] + r[1] for r in rows)
    trips = sum(r[3] for r in rows)
    plies = sum(r[4] for r in rows)
    if plies == 0:
        sys.exit(f"{arena.name}: no engine answered a search")
    check_games(arena.pgn(directory), games, arena.engine, plies, arena.name)
    cpu = (usage.ru_utime + usage.ru_stime) * 1e6 - engines_cpu
    shutil.rmtree(directory, ignore_errors=True)
    return Figures(wall * 1e6 / plies, cpu / plies, trips / plies, plies, whole * 1e6 / plies)


def instructions(arena: Arena, engine: Path, games: int, scratch: Path) -> tuple[int, int]:
    """(instructions of the arena's own process under callgrind, plies) of one match."""
    directory = Path(tempfile.mkdtemp(dir=scratch))
    log = directory / "engines.log"
    count, _ = floors.callgrind(arena.command(engine, games, directory), cwd=directory, env={"PEERS_LOG": str(log)})
    plies = sum(int(line.split()[4]) for line in log.read_text().splitlines() if line.strip())
    shutil.rmtree(directory, ignore_errors=True)
    return count, plies


def count_instructions(arenas: list[Arena], engine: Path, games: int, scratch: Path) -> None:
    small = max(2, games // 4 // 2 * 2)
    print(f"quarto-arena's own instructions per ply (callgrind; runs of {games} and {small} games, the difference)")
    for arena in arenas:
        big, big_plies = instructions(arena, engine, games, scratch)
        least, small_plies = instructions(arena, engine, small, scratch)
        if big_plies <= small_plies:
            sys.exit("error: --games must be at least 8, so that a quarter of them is fewer")
        per_ply = (big - least) / (big_plies - small_plies)
        print(f"  {arena.name:<28} {per_ply:9.0f} instructions per ply ({big_plies - small_plies} plies)")


def marginal(big: Figures, small: Figures) -> Figures:
    """What the plies of ``big`` beyond those of ``small`` cost, per ply."""
    extra = big.plies - small.plies
    if extra <= 0:
        sys.exit("error: --games must be at least 8, so that a quarter of them is fewer")
    return Figures(
        (big.wall_us * big.plies - small.wall_us * small.plies) / extra,
        (big.cpu_us * big.plies - small.cpu_us * small.plies) / extra,
        big.trips,
        extra,
    )


def ratio(runs: list[Figures], base: list[Figures], field: str) -> str:
    """The median over rounds of a figure's ratio to the base's in the same round; rounds where the base's marginal
    figure is not above zero (lost in a loaded machine's noise) are left out, and said to be."""
    pairs = [(getattr(f, field), getattr(b, field)) for f, b in zip(runs, base, strict=True)]
    kept = [x / y for x, y in pairs if y > 0]
    if not kept:
        return "n/a (the base's figure is lost in the noise: more --games)"
    left = len(pairs) - len(kept)
    return f"{statistics.median(kept):.2f}x" + (f" ({left} rounds left out)" if left else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fastchess", help="path of a fastchess binary (skipped when not given)")
    parser.add_argument("--cutechess", default=shutil.which("cutechess-cli"), help="path of cutechess-cli")
    parser.add_argument("--games", type=int, default=2000, help="games per run (even; fewer leave the margin to noise)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--concurrency", default="1,2,4", help="concurrencies, comma-separated")
    parser.add_argument(
        "--arena",
        default=shutil.which("quarto-arena", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"),
        help="the quarto-arena command",
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count quarto-arena's instructions per ply with callgrind"
    )
    args = parser.parse_args()
    if not args.arena:
        sys.exit("error: quarto-arena is not on PATH: give --arena")
    levels = [int(c) for c in args.concurrency.split(",") if c]
    arena_argv = shlex.split(args.arena)
    arenas: list[Arena] = []
    for c in levels:
        if args.fastchess:
            arenas.append(fastchess(args.fastchess, c))
        if args.cutechess:
            arenas.append(cutechess(args.cutechess, c))
        if c == 1:
            arenas.append(quarto(arena_argv, "play", c))
        arenas.append(quarto(arena_argv, "tournament", c))
    if args.instructions:
        games = args.games if "--games" in sys.argv else 800
        with tempfile.TemporaryDirectory(prefix="peers-") as scratch:
            engine = build(Path(scratch))["uqi"]
            count_instructions([a for a in arenas if a.engine == "uqi"], engine, games, Path(scratch))
        return
    print(
        f"{args.games} games per run (16 plies of chess, 17 turns of Quarto: checked in each PGN), "
        f"{args.rounds} interleaved rounds"
    )
    whole: dict[str, list[Figures]] = {a.name: [] for a in arenas}
    results: dict[str, list[Figures]] = {a.name: [] for a in arenas}
    with tempfile.TemporaryDirectory(prefix="peers-") as scratch:
        engines = build(Path(scratch))
        small_games = max(2, args.games // 4 // 2 * 2)
        for r in range(args.rounds):
            for arena in arenas:
                load = os.getloadavg()[0]
                small = run(arena, engines[arena.engine], small_games, Path(scratch))
                big = run(arena, engines[arena.engine], args.games, Path(scratch))
                figures = marginal(big, small)
                whole[arena.name].append(big)
                results[arena.name].append(figures)
                print(
                    f"  round {r + 1} {arena.name:<28} whole: wall {big.whole_wall_us:6.1f} CPU {big.cpu_us:6.1f}"
                    f"  marginal: wall {figures.wall_us:6.1f} CPU {figures.cpu_us:6.1f} µs/ply searched  "
                    f"{figures.trips:4.2f} trips/ply  ({big.plies} plies; load {load:.2f})"
                )
    print(f"load {os.getloadavg()[0]:.2f}")
    print("whole runs with default flags, to the exit (µs per ply searched; median of rounds; ratio to fastchess)")
    table(arenas, whole, "whole_wall_us")
    print("marginal (the run less a quarter of it; fastchess's wall to its last game's record)")
    table(arenas, results, "wall_us")


def table(arenas: list[Arena], results: dict[str, list[Figures]], wall: str) -> None:
    """One line per arena: median wall and CPU per ply, and their same-round ratios to fastchess's."""
    print(f"  {'arena':<28} {'wall':>7} {'CPU':>7}   vs fastchess (same round)")
    for arena in arenas:
        runs = results[arena.name]
        line = (
            f"  {arena.name:<28} {statistics.median(getattr(f, wall) for f in runs):7.1f} "
            f"{statistics.median(f.cpu_us for f in runs):7.1f}"
        )
        base = results.get(f"fastchess c={arena.concurrency}")
        if base is not None and not arena.name.startswith("fastchess"):
            line += f"   wall {ratio(runs, base, wall)}, CPU {ratio(runs, base, 'cpu_us')}"
        print(line)


if __name__ == "__main__":
    main()
