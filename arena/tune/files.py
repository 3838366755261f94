"""The files a tune keeps beside its run's: ``tune.json``, the current state, and ``tune.csv``, one row per
iteration. Both are made from the :class:`~.tuner.Tuner`, which the journal rebuilds: a resume writes them again
whole, so what a kill left in them never counts.

``tune.json`` (one line, written atomically, a temporary file renamed over it, after every counted pair: once for the
pairs one journal sync counts together)::

    {"engine": "my_bot",
     "values": {"Aggression": 57.31, ...},        theta now (real-valued)
     "options": {"Aggression": 57, ...},          theta rounded: what to give the engine
     "pairs": 120, "pairs_total": 20000,          pairs counted, pairs asked for
     "iteration": 120,                            the iterations made (one per counted pair)
     "games": 240,
     "params": {"Aggression": {"start": 50, "min": 0, "max": 100, "c_end": 5, "r_end": 0.002}, ...},
     "next": {"Aggression": {"c": 8.1, "a": 0.21, "r": 0.0032}, ...},   the gains of the next iteration
     "gains": {"alpha": 0.602, "gamma": 0.101, "A": 2000.0},
     "seed": 0,
     "complete": false}

``tune.csv``: ``iteration, pair, games, result, time`` then, per parameter ``P``: ``P`` (theta after the update),
``P+`` and ``P-`` (the values played), ``c_P``, ``a_P``, ``r_P``.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TextIO

from .spec import TuneSpec
from .tuner import Iteration, Tuner

__all__ = ["CSV_NAME", "JSON_NAME", "TuneFiles", "csv_header", "csv_row", "state"]

JSON_NAME: Final = "tune.json"
CSV_NAME: Final = "tune.csv"


def state(tuner: Tuner) -> dict[str, Any]:
    """What ``tune.json`` holds (see the module's docstring)."""
    t = tuner.tune
    g = t.gains
    done = tuner.pairs
    k = min(done + 1, g.pairs)
    return {
        "engine": t.engine,
        "values": {p.name: v for p, v in zip(t.params, tuner.theta, strict=True)},
        "options": {p.name: round(v) for p, v in zip(t.params, tuner.theta, strict=True)},
        "pairs": done,
        "pairs_total": g.pairs,
        "iteration": done,
        "games": 2 * done,
        "params": {
            p.name: {"start": p.start, "min": p.min, "max": p.max, "c_end": p.c_end, "r_end": p.r_end} for p in t.params
        },
        "next": {p.name: {"c": g.c(p, k), "a": g.a(p, k), "r": g.r(p, k)} for p in t.params},
        "gains": {"alpha": g.alpha, "gamma": g.gamma, "A": g.big_a},
        "seed": t.seed,
        "complete": done >= g.pairs,
    }


def csv_header(tune: TuneSpec) -> list[str]:
    """The columns of ``tune.csv``."""
    out = ["iteration", "pair", "games", "result", "time"]
    for p in tune.params:
        out += [p.name, f"{p.name}+", f"{p.name}-", f"c_{p.name}", f"a_{p.name}", f"r_{p.name}"]
    return out


def csv_row(it: Iteration) -> list[object]:
    """One iteration as a row of ``tune.csv``."""
    row: list[object] = [it.number, it.pair, f"{2 * it.pair - 1} {2 * it.pair}", it.result, f"{it.time:.0f}"]
    for i, value in enumerate(it.values):
        played: Sequence[object] = ("", "") if it.plus is None or it.minus is None else (it.plus[i], it.minus[i])
        row += [repr(value), *played, repr(it.c[i]), repr(it.a[i]), repr(it.r[i])]
    return row


def _atomic(path: Path, text: str) -> None:
    """``path`` replaced by a file holding ``text``: a reader sees the old file or the new one, never half of one.
    (Through the os module: a text file object costs more than the rest of a pair's bookkeeping.)"""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)
    os.replace(tmp, path)


class TuneFiles:
    """``tune.json`` and ``tune.csv`` of one tune directory, kept up to date as pairs are counted."""

    def __init__(self, directory: Path, tuner: Tuner) -> None:
        self.directory = directory
        self.tuner = tuner
        self._csv: TextIO | None = None
        self._due = False

    def rewrite(self) -> None:
        """Both files whole, from the tuner (at the start of a tune, and of each resume)."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(csv_header(self.tuner.tune))
        writer.writerows(csv_row(it) for it in self.tuner.iterations)
        _atomic(self.directory / CSV_NAME, text.getvalue())
        self.write_state()
        self._csv = open(self.directory / CSV_NAME, "a", encoding="utf-8", newline="")  # noqa: SIM115 - close()

    def write_state(self) -> None:
        """``tune.json``, atomically."""
        # One line: the indented form takes json's pure-Python encoder, a tenth of a millisecond a pair.
        _atomic(self.directory / JSON_NAME, json.dumps(state(self.tuner)) + "\n")

    def counted(self, iteration: Iteration) -> None:
        """A pair counted: its row appended, and both files written out once the pairs counted with it (the games
        one journal sync counts come in one turn of the event loop) are in too; at once outside a loop."""
        if self._csv is not None:
            csv.writer(self._csv, lineterminator="\n").writerow(csv_row(iteration))
        if self._due:
            return
        self._due = True
        try:
            asyncio.get_running_loop().call_soon(self.flush)
        except RuntimeError:  # counted outside the loop
            self.flush()

    def flush(self) -> None:
        """``tune.csv`` flushed and ``tune.json`` written: what has been counted so far."""
        self._due = False
        if self._csv is not None and not self._csv.closed:
            self._csv.flush()
        self.write_state()

    def close(self) -> None:
        """Writes what is still due, and closes ``tune.csv``."""
        if self._due:
            self.flush()
        if self._csv is not None:
            self._csv.close()
            self._csv = None
