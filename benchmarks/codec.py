"""What the generic codec (arena/codec.py) costs per game record, against the hand-written ``to_dict`` it replaced.

    python benchmarks/codec.py [--rounds 30] [--number 1000]

A record of a real game (tests/data/serialized-v1, 9 turns, two engine identities) is written and read many times
by each; rounds alternate them, and the best round of each is printed with the ratios. The baselines are copies of
the old hand-written ``GameRecord.to_dict`` and ``from_dict`` (e822f4e), kept here only to be measured against;
the codec's slow path (its plan read field by field, what the generated coders replaced) is printed beside them.
Times are this thread's CPU time (``time.thread_time``), which a loaded machine disturbs less than the wall clock.
A record is written once per game (journal and JSON Lines share the dict) and read on resume and by the pages.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import timeit
from pathlib import Path
from typing import Any

from quarto_arena.arena import codec
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord

RECORD = Path(__file__).resolve().parent.parent / "tests" / "data" / "serialized-v1" / "run" / "games.jsonl"


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


def hand_read(d: dict[str, Any]) -> GameRecord:
    """GameRecord.from_dict as it was written by hand (the baseline; it converted values with ``str()``/``int()``
    where the codec checks their types)."""
    return GameRecord(
        first=str(d["first"]),
        second=str(d["second"]),
        result=Result(d["result"]),
        termination=Termination(d["termination"]),
        detail=str(d.get("detail", "")),
        variant=str(d["variant"]),
        time_control=str(d["time_control"]),
        start=str(d["start"]),
        opening=tuple(str(t) for t in d["opening"]),
        turns=tuple(TurnRecord(str(t), int(ms), None if s is None else str(s)) for t, ms, s in d["turns"]),
        game_id=int(d["game_id"]),
        round=int(d["round"]),
        started=str(d.get("started", "")),
        exit_info={str(k): str(v) for k, v in dict(d.get("exit_info", {})).items()},
        engines=tuple(hand_read_identity(dict(e)) for e in d.get("engines", ())),
    )


def hand_read_identity(d: dict[str, Any]) -> EngineIdentity:
    protocol = d.get("protocol")
    return EngineIdentity(
        id_name=None if d.get("id_name") is None else str(d["id_name"]),
        author=None if d.get("author") is None else str(d["author"]),
        protocol=None if protocol is None else int(protocol),
        source=str(d.get("source", "")),
        options={str(k): str(v) for k, v in dict(d.get("options", {})).items()},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--number", type=int, default=1000, help="calls per round")
    args = parser.parse_args()
    rounds, number = args.rounds, args.number
    record = GameRecord.from_dict(json.loads(RECORD.read_text().splitlines()[0]))
    data = record.to_dict()
    assert hand_written(record) == data and hand_read(data) == record
    calls = {
        "hand-written to_dict": lambda: hand_written(record),
        "codec to_dict": lambda: record.to_dict(),
        "codec to_dict, slow path": lambda: codec._slow_to_dict(record),
        "hand-written from_dict": lambda: hand_read(data),
        "codec from_dict": lambda: GameRecord.from_dict(data),
        "codec from_dict, slow path": lambda: codec._slow_from_dict(GameRecord, data),
    }
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            best[name] = min(best[name], timeit.timeit(call, number=number, timer=time.thread_time) / number)
    for name, seconds in best.items():
        print(f"{name}: {seconds * 1e6:.1f} us per record")
    for what in ("to_dict", "from_dict"):
        ratio = best[f"codec {what}"] / best[f"hand-written {what}"]
        slow = best[f"codec {what}"] / best[f"codec {what}, slow path"]
        print(f"codec/hand-written {what}: {ratio:.2f}x, codec/slow path: {slow:.2f}x (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
