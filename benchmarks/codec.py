"""What the generic codec (arena/codec.py) costs per game record, against the hand-written ``to_dict`` it replaced.

    python benchmarks/codec.py [--rounds 5]

A record of a real game (tests/data/serialized-v1, 9 turns, two engine identities) is written and read many times
by each; rounds alternate the two, and the best round of each is printed with the ratio. The baseline is a copy of
the old ``GameRecord.to_dict`` (e822f4e), kept here only to be measured against. A record is written once per game
(journal and JSON Lines share the dict) and read on resume and by the pages.
"""

from __future__ import annotations

import argparse
import json
import os
import timeit
from pathlib import Path
from typing import Any

from quarto_arena.arena.records import GameRecord

RECORD = Path(__file__).resolve().parent.parent / "tests" / "data" / "serialized-v1" / "run" / "games.jsonl"
NUMBER = 5000


def hand_written(r: GameRecord) -> dict[str, Any]:
    """GameRecord.to_dict as it was written by hand (the baseline)."""
    return {
        "first": r.first,
        "second": r.second,
        "result": r.result.value,
        "termination": r.termination.value,
        "detail": r.detail,
        "variant": r.variant,
        "time_control": r.time_control,
        "start": r.start,
        "opening": list(r.opening),
        "turns": [[t.token, t.ms, t.score] for t in r.turns],
        "game_id": r.game_id,
        "round": r.round,
        "started": r.started,
        "exit_info": dict(r.exit_info),
        "engines": [
            {"id_name": e.id_name, "author": e.author, "protocol": e.protocol, "source": e.source, "options": e.options}
            for e in r.engines
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    record = GameRecord.from_dict(json.loads(RECORD.read_text().splitlines()[0]))
    data = record.to_dict()
    assert hand_written(record) == data
    best = {"hand-written to_dict": float("inf"), "codec to_dict": float("inf"), "codec from_dict": float("inf")}
    for _ in range(rounds):
        for name, call in (
            ("hand-written to_dict", lambda: hand_written(record)),
            ("codec to_dict", record.to_dict),
            ("codec from_dict", lambda: GameRecord.from_dict(data)),
        ):
            best[name] = min(best[name], timeit.timeit(call, number=NUMBER) / NUMBER)
    for name, seconds in best.items():
        print(f"{name}: {seconds * 1e6:.1f} us per record")
    ratio = best["codec to_dict"] / best["hand-written to_dict"]
    print(f"codec/hand-written to_dict: {ratio:.1f}x (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
