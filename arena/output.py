"""What the CLI shows: progress of many games (a live bar on a terminal, plain lines elsewhere) and tables.

Progress goes to standard error so that standard output carries only the final table (``--format json >
table.json`` works while the log still shows progress). On a terminal one status line is redrawn in place; in a
CI log or under ``nohup`` every game gets lines in the style of cutechess-cli::

    Started game 17 of 40 (random vs greedy)
    Finished game 17 (random vs greedy): 0-1 {time forfeit}

Tables are :class:`~quarto_arena.arena.stats.TableRows`; :func:`format_table` renders them in any tabulate
format, or as CSV or JSON with unrounded numbers.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import time
from collections.abc import Mapping, Sequence
from typing import Final, Protocol, TextIO

import tabulate as tabulate_module
from tabulate import tabulate

from .match import MatchSummary
from .records import GameRecord, Result, Termination
from .stats import Cell, TableRows, pentanomial_stats, rating_rows, trinomial_stats
from .tournament import GameFinished, GameStarted, Notice, forfeit_counts, rating_table

__all__ = [
    "TABLE_FORMATS",
    "PlainProgress",
    "Progress",
    "TournamentView",
    "TtyProgress",
    "forfeit_rows",
    "format_table",
    "game_comment",
    "interim_title",
    "make_progress",
    "results_table",
    "table_block",
]

TABLE_FORMATS: Final = (*tabulate_module.tabulate_formats, "csv", "json")
"""Every value ``--format`` accepts."""

# Columns shown as percentages in text tables, and columns shown with one decimal.
_PERCENT: Final = frozenset({"score", "draw_rate", "los_next", "los"})
_ONE_DECIMAL: Final = frozenset({"rating", "margin", "elo", "elo_margin", "nelo", "nelo_margin"})


def _cell(header: str, value: Cell) -> Cell:
    """A value as a text table shows it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if header in _PERCENT:
            return f"{100 * value:.1f}%"
        if header in _ONE_DECIMAL:
            return f"{value:.1f}"
        return f"{value:g}"
    return value


def _json_value(value: Cell) -> Cell:
    # JSON has no infinity; a one-sided match has an infinite Elo, which we write as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def format_table(rows: TableRows, fmt: str = "simple") -> str:
    """Renders a table in ``fmt``: any tabulate format, ``csv`` or ``json``; raises ValueError for another name."""
    if fmt == "json":
        return json.dumps([{k: _json_value(v) for k, v in row.items()} for row in rows.as_dicts()], indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(rows.headers)
        writer.writerows(["" if v is None else v for v in row] for row in rows.rows)
        return out.getvalue().rstrip("\n")
    if fmt not in tabulate_module.tabulate_formats:
        raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    shown = [[_cell(h, v) for h, v in zip(rows.headers, row, strict=True)] for row in rows.rows]
    return str(tabulate(shown, headers=list(rows.headers), tablefmt=fmt, disable_numparse=True))


def forfeit_rows(forfeits: Mapping[str, Mapping[Termination, int]]) -> TableRows:
    """Games lost by engine failure, per engine and reason: one row per engine, one column per reason seen."""
    reasons = [t for t in Termination if t.is_failure and any(by.get(t) for by in forfeits.values())]
    headers = ("engine", "forfeits", *(t.value.replace(" ", "_") for t in reasons))
    out: list[tuple[Cell, ...]] = []
    for name in sorted(forfeits):
        by = forfeits[name]
        out.append((name, sum(by.values()), *(by.get(t, 0) for t in reasons)))
    return TableRows(headers, tuple(out))


def results_table(ratings: TableRows, forfeits: Mapping[str, Mapping[Termination, int]] | None = None) -> TableRows:
    """The rating table with the forfeits of each engine added (a total, then one column per reason seen).

    Columns that say nothing are dropped: ``pool`` when every player is in one pool, ``regularized`` when no rating
    needed the prior.
    """
    headers = list(ratings.headers)
    rows = [list(r) for r in ratings.rows]
    for column in ("pool", "regularized"):
        i = headers.index(column) if column in headers else -1
        if i >= 0 and len({r[i] for r in rows if r[i] is not None} - {False}) <= (1 if column == "pool" else 0):
            del headers[i]
            for r in rows:
                del r[i]
    if forfeits:
        extra = forfeit_rows(forfeits)
        by_name = {row[0]: row[1:] for row in extra.rows}
        player = headers.index("player")
        empty = (0,) * (len(extra.headers) - 1)
        headers.extend(extra.headers[1:])
        for r in rows:
            r.extend(by_name.get(r[player], empty))
    return TableRows(tuple(headers), tuple(tuple(r) for r in rows))


def game_comment(record: GameRecord) -> str:
    """The brace comment of a finished game: the reason it ended, e.g. ``time forfeit`` or ``QUARTO! by greedy``."""
    if record.termination is not Termination.NORMAL:
        return str(record.termination.value)
    if record.result is Result.DRAW:
        return "draw"
    winner = record.first if record.result is Result.FIRST_WINS else record.second
    return f"QUARTO! by {winner}"


class Progress(Protocol):
    """Where the CLI reports a running tournament or SPRT."""

    def started(self, game_id: int, first: str, second: str) -> None:
        """A game began."""

    def finished(self, record: GameRecord) -> None:
        """A game ended and is counted."""

    def message(self, text: str) -> None:
        """A line the user must see (warning, interim table)."""

    def note(self, text: str) -> None:
        """A status that replaces the previous one (SPRT: the LLR after each pair)."""

    def close(self) -> None:
        """No more events: leave the stream clean."""


class PlainProgress:
    """cutechess-cli style lines, one per event (for logs, pipes and ``nohup``)."""

    def __init__(self, stream: TextIO, total: int, done: int = 0) -> None:
        """``total`` games in the schedule, ``done`` already finished (a resumed tournament)."""
        self.stream = stream
        self.total = total
        self.done = done

    def started(self, game_id: int, first: str, second: str) -> None:
        """Writes ``Started game N of T (A vs B)``."""
        of = f" of {self.total}" if self.total else ""  # an SPRT has no fixed number of games
        self._line(f"Started game {game_id}{of} ({first} vs {second})")

    def finished(self, record: GameRecord) -> None:
        """Writes ``Finished game N (A vs B): RESULT {reason}``."""
        self.done += 1
        self._line(
            f"Finished game {record.game_id} ({record.first} vs {record.second}): "
            f"{record.result.value} {{{game_comment(record)}}}"
        )

    def message(self, text: str) -> None:
        """Writes the text as it is."""
        self._line(text)

    def note(self, text: str) -> None:
        """Writes the status as a line of its own (a log keeps every one)."""
        self._line(text)

    def close(self) -> None:
        """Nothing to clean up."""

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


class TtyProgress:
    """A status line redrawn in place: a bar, games done, games running, speed and time left."""

    _WIDTH: Final = 30

    def __init__(self, stream: TextIO, total: int, done: int = 0) -> None:
        """``total`` games in the schedule (0: open-ended), ``done`` already finished (a resumed tournament)."""
        self.stream = stream
        self.total = total
        self.done = done
        self._first_done = done
        self.running: set[int] = set()
        self.results = {"1-0": 0, "0-1": 0, "1/2-1/2": 0}
        self.forfeits = 0
        self.extra = ""
        self._t0 = time.monotonic()
        self._shown = False

    def started(self, game_id: int, first: str, second: str) -> None:
        """Counts the game as running and redraws."""
        self.running.add(game_id)
        self._draw()

    def finished(self, record: GameRecord) -> None:
        """Counts the result and redraws."""
        self.running.discard(record.game_id)
        self.done += 1
        if record.result.value in self.results:
            self.results[record.result.value] += 1
        if record.termination.is_failure:
            self.forfeits += 1
        self._draw()

    def message(self, text: str) -> None:
        """Clears the status line, writes the text, redraws the status below it."""
        self._clear()
        self.stream.write(text + "\n")
        self._draw()

    def note(self, text: str) -> None:
        """Shows the status at the end of the status line."""
        self.extra = text
        self._draw()

    def close(self) -> None:
        """Ends the status line so the next output starts on a fresh line."""
        if self._shown:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False

    def status(self) -> str:
        """The status line's text (without control characters)."""
        elapsed = time.monotonic() - self._t0
        new = self.done - self._first_done
        rate = new / elapsed if elapsed > 0 and new else 0.0
        if self.total:
            filled = round(self._WIDTH * self.done / self.total)
            bar = "[" + "#" * filled + "." * (self._WIDTH - filled) + "] "
            count = f"{self.done}/{self.total}"
            eta = _duration((self.total - self.done) / rate) + " left" if rate else "? left"
        else:
            bar, count, eta = "", str(self.done), _duration(elapsed)
        w, b, d = self.results["1-0"], self.results["0-1"], self.results["1/2-1/2"]
        return (
            f"{bar}{count} games, {len(self.running)} running | "
            f"first {w} second {b} draw {d} forfeits {self.forfeits} | {rate:.1f}/s, {eta}"
        ) + (f" | {self.extra}" if self.extra else "")

    def _clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")

    def _draw(self) -> None:
        self._clear()
        # A line wider than the terminal wraps, and \r would then redraw only its last part.
        width = shutil.get_terminal_size().columns - 1
        self.stream.write(self.status()[:width])
        self.stream.flush()
        self._shown = True


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def make_progress(stream: TextIO, total: int, done: int = 0, *, live: bool | None = None) -> Progress:
    """A live bar when ``stream`` is a terminal (or ``live`` says so), plain lines otherwise."""
    if live is None:
        live = stream.isatty()
    return TtyProgress(stream, total, done) if live else PlainProgress(stream, total, done)


def interim_title(done: int, total: int) -> str:
    """The line above an interim table."""
    return f"Rating after {done} of {total} games:"


def table_block(title: str, tables: Sequence[tuple[str, TableRows]], fmt: str) -> str:
    """Several titled tables in one block (text formats only)."""
    parts = [title] if title else []
    for name, rows in tables:
        if not rows.rows:
            continue
        if name:
            parts.append(name)
        parts.append(format_table(rows, fmt))
    return "\n\n".join(parts)


class TournamentView:
    """Turns a tournament's events into progress output and interim tables (the CLI passes it as the callback)."""

    def __init__(
        self,
        progress: Progress,
        names: Sequence[str],
        records: Sequence[GameRecord],
        total: int,
        *,
        fmt: str = "simple",
        interval: int = 0,
    ) -> None:
        """``records``: games already finished (a resume); ``interval``: interim table every that many games."""
        self.progress = progress
        self.names = list(names)
        self.records = list(records)
        self.total = total
        self.fmt = fmt if fmt not in ("csv", "json") else "simple"
        self.interval = interval

    def __call__(self, event: object) -> None:
        """Handles one event of :meth:`quarto_arena.arena.tournament.Tournament.run`."""
        if isinstance(event, GameStarted):
            self.progress.started(event.game.game_id, event.game.first, event.game.second)
        elif isinstance(event, GameFinished):
            self.records.append(event.record)
            self.progress.finished(event.record)
            if self.interval and event.done % self.interval == 0 and event.done < event.total:
                self.progress.message(interim_title(event.done, event.total) + "\n" + self.table_text(self.fmt))
        elif isinstance(event, Notice):
            self.progress.message(f"warning: {event.text}")

    def table(self) -> TableRows:
        """The results so far: ratings plus forfeits."""
        forfeits = forfeit_counts(self.records, self.names)
        return results_table(rating_rows(rating_table(self.records, self.names)), forfeits)

    def table_text(self, fmt: str) -> str:
        """The results table rendered in ``fmt``."""
        return format_table(self.table(), fmt)


def match_lines(summary: MatchSummary) -> list[str]:
    """The statistics of a two-engine match, from the first engine's side: W/L/D, pairs, Elo, nElo, LOS.

    Elo and its interval come from the game counts; normalized Elo and LOS from the pentanomial pair counts when
    there are complete pairs (colour-swapped pairs are the real trials), else from the game counts. An estimate
    is printed as ``+40.7 +/- 30.4`` where fishtest's normal interval exists, else as its 95% interval or bound
    (``+0.0 (95%: -392.5 to +392.5)``, ``> +316.6 (95%)``): never an infinity (see
    :mod:`quarto_arena.arena.stats.match`).
    """
    s = summary
    lines = [f"Score of {s.engine} vs {s.opponent}: {s.wins} - {s.losses} - {s.draws}  [{s.score:.3f}] {s.games}"]
    if not s.games:
        return lines
    trinomial = trinomial_stats(s.wins, s.losses, s.draws)
    pairs = sum(s.pentanomial)
    by_pairs = pentanomial_stats(s.pentanomial) if pairs else trinomial
    lines.append(f"Elo difference: {trinomial.elo}, nElo: {by_pairs.nelo}, LOS: {100 * by_pairs.los:.1f} %")
    if pairs:
        ll, ld, wl_dd, wd, ww = s.pentanomial
        counted = f"{pairs} pair" if pairs == 1 else f"{pairs} pairs"
        lines.append(f"Pairs [LL, LD, WL+DD, WD, WW]: [{ll}, {ld}, {wl_dd}, {wd}, {ww}]  ({counted})")
    for engine, reasons in sorted(s.forfeits.items()):
        lines.append(f"Forfeits by {engine}: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())))
    return lines
