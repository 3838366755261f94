"""What a counted game's records cost the arena, apart from its turns: the journal frame, PGN and JSON Lines.

    python benchmarks/records.py [--games 240] [--rounds 5]
    python benchmarks/records.py --instructions

The games of a real run (four seeded instant C bots, engines/c/quarto_bot.c, in memory) are counted again, without
engines, through the run's own code for a counted game: the committer's ``to_dict`` and one journal append (one
write and one ``fsync``) per group of ``--batch`` games, then ``Playing.counted`` for each (games.pgn and games.jsonl
written, the group flushed), in a run directory. Printed: the arena's CPU per game (best and median of the rounds;
``fsync``'s system time included), and with ``--instructions`` the instructions per game under callgrind (user space;
the difference of two lengths, so start-up and the run that makes the games cancel out; the same on a loaded
machine). Divide by a game's engine turns (about 14 in benchmarks/tournament.py) for a figure per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import resource
import statistics
import sys
import tempfile
from pathlib import Path

import floors  # benchmarks/floors.py, beside this script
import tournament  # benchmarks/tournament.py: the same bots and run
from quarto_arena.arena.records import GameRecord
from quarto_arena.arena.roster import resolve_engines
from quarto_arena.arena.run import Run
from quarto_arena.arena.run.runner import Playing


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def played(bot: Path, games: int) -> tuple[tournament.RunSpec, list[GameRecord]]:
    """The spec and the records of a seeded run in memory."""
    engines = tuple(
        dataclasses.replace(e, options={"Seed": str(i)})
        for i, e in enumerate(resolve_engines([f"bot{i}={bot}" for i in range(1, 5)]), 1)
    )
    spec = tournament.make_spec(engines, games, 1)
    with Run.in_memory(spec) as run:
        outcome = asyncio.run(run.run())
    return spec, list(outcome.records)


def count(spec: tournament.RunSpec, records: list[GameRecord], directory: Path, batch: int) -> float:
    """Counts ``records`` as a run directory's committer and Playing do; the CPU seconds it took."""
    return asyncio.run(_count(spec, records, directory, batch))


async def _count(spec: tournament.RunSpec, records: list[GameRecord], directory: Path, batch: int) -> float:
    # In an event loop, as in a run: Playing flushes games.pgn and games.jsonl once a group, in a callback.
    with Run.create(spec, directory) as run:
        assert run.journal is not None
        playing = Playing(run, None, lambda _event: None)  # type: ignore[arg-type]  # no game is played
        try:
            start = cpu()
            for k in range(0, len(records), batch):
                group = records[k : k + batch]
                dicts = [r.to_dict() for r in group]
                run.journal.append_many(group, dicts)
                for record, data in zip(group, dicts, strict=True):
                    playing.counted(record, data)
                await asyncio.sleep(0)
            return cpu() - start
        finally:
            playing.close()


def one(bot: Path, games: int, batch: int, directory: Path) -> None:
    spec, records = played(bot, 24)
    records = (records * (games // len(records) + 1))[:games]
    count(spec, records, directory, batch)
    print(games)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=240, help="games counted a round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=20, help="games a journal append (group commit) holds")
    parser.add_argument("--instructions", action="store_true", help="count instructions per game with callgrind")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bot", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.bot, args.games, args.batch, args.dir)
        return
    with tempfile.TemporaryDirectory() as tmp:
        bot = tournament.build_bot(Path(tmp))
        if args.instructions:
            sizes = (args.games // 4, args.games)
            counts = []
            for k, games in enumerate(sizes):
                argv = [sys.executable, str(Path(__file__).resolve()), "--one", "--bot", str(bot)]
                argv += ["--games", str(games), "--batch", str(args.batch), "--dir", str(Path(tmp) / f"i{k}")]
                counts.append(floors.callgrind(argv)[0])
            per_game = (counts[1] - counts[0]) / (sizes[1] - sizes[0])
            print(f"a counted game's records: {per_game:9.0f} instructions per game ({sizes[1]} - {sizes[0]} games)")
            return
        spec, records = played(bot, args.games)
        seconds = [count(spec, records, Path(tmp) / f"r{r}", args.batch) for r in range(args.rounds)]
    per_game = [1e6 * s / len(records) for s in seconds]
    print(
        f"a counted game's records ({len(records)} games, groups of {args.batch}, {args.rounds} rounds):"
        f" {min(per_game):6.1f} / {statistics.median(per_game):6.1f} us of CPU per game (best / median)"
    )


if __name__ == "__main__":
    main()
