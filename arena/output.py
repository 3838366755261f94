"""What the CLI shows: progress of a run, the tables, the final report, and the standings files.

Progress goes to standard error so that standard output carries only the result (``--format json > table.json``
works while the log still shows progress):

- on a terminal, one status line redrawn in place (:class:`LiveProgress`): games done, running score or LLR,
  forfeits, games/s and the time left;
- elsewhere (a CI log, ``nohup``, a pipe), the same status as a line of its own every so many games or seconds
  (:class:`PeriodicProgress`; ``--progress-every``), so a 20,000-game run writes a few dozen lines, not thousands;
  every 1 game gives one cutechess-style ``Finished game ...`` line per game instead;
- ``--quiet``: nothing but warnings that matter, then the result.

Tables are :class:`~quarto_arena.arena.stats.TableRows`; :func:`format_table` renders them in any tabulate format,
or as CSV or JSON with unrounded numbers. :func:`final_report` is the text a run ends with, also written into the
run directory by :func:`write_standings` (``standings.txt``, ``.csv``, ``.json``), so nobody has to scrape stdout.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from quarto_arena.protocol.text import safe_text

from .records import GameRecord, Result, Termination
from .results import MatchSummary, forfeit_counts, rating_table, summarize
from .stats import (
    Cell,
    RatingTable,
    TableRows,
    crosstable_rows,
    display_cell,
    named,
    pentanomial_stats,
    rating_rows,
    trinomial_stats,
)

if TYPE_CHECKING:
    # Not at run time: the runner (engines, ZeroMQ, asyncio) is a third of a second that a table never needs.
    from .run import RunKind, RunOutcome

__all__ = [
    "COLUMNS",
    "MARGIN_NOTE",
    "REGULARIZED_NOTE",
    "LiveProgress",
    "PeriodicProgress",
    "ProgressEvery",
    "RunView",
    "duration",
    "final_report",
    "forfeit_rows",
    "format_table",
    "game_comment",
    "match_figures",
    "match_lines",
    "parse_progress_every",
    "rate_run",
    "rating_notes",
    "results_table",
    "verdict_line",
    "write_standings",
]

_OWN_FORMATS: Final = ("csv", "json")


def __getattr__(name: str) -> tuple[str, ...]:
    """``TABLE_FORMATS``, every value ``--format`` accepts: tabulate's formats, csv and json. Looked up only when
    asked for, since tabulate costs a tenth of a run's start-up to import (it reads its package metadata)."""
    if name == "TABLE_FORMATS":
        from tabulate import tabulate_formats

        return (*tabulate_formats, *_OWN_FORMATS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MARGIN_NOTE: Final = "margin: half-width of the rating's 95% CI (maximum-likelihood fit, games as trials)"
"""Printed under every rating table (terminal, standings.txt, report): which interval the margin column is."""
REGULARIZED_NOTE: Final = (
    "regularized: a one-sided result (100% or 0%) has no finite maximum-likelihood rating; one virtual draw was"
    " added to each one-sided pair"
)
"""Printed under a rating table when a rating needed the virtual draws (the column shows whose, when not all)."""

COLUMNS: Final = {
    "rank": "place in the table (blank: no game played)",
    "player": "the engine's name",
    "rating": "logistic Elo, maximum likelihood, pool average 0 (or the --anchor)",
    "margin": "half-width of the rating's 95% CI, from the maximum-likelihood fit (games as trials)",
    "games": "games played (forfeits included, aborted games not)",
    "points": "1 per win, 1/2 per draw",
    "score": "points per game",
    "draw_rate": "draws per game",
    "los_next": "likelihood of superiority over the engine on the next line",
    "pool": "players never linked by games are rated in separate pools (shown only when there are several)",
    "regularized": "rated with a virtual draw because a result was one-sided (100% or 0%)",
    "forfeits": "games lost by an engine failure; the next columns split them by reason",
}
"""What each column of the results table means (shown by ``quarto-arena tournament --help``)."""

#: Engine failures shown in full before the rest are only counted in the progress line.
_FAILURES_SHOWN: Final = 10
#: Seconds since the last status line before a tenth-of-the-schedule milestone gets a line of its own.
_MILESTONE_GAP_S: Final = 5.0


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
    from tabulate import tabulate, tabulate_formats

    if fmt not in tabulate_formats:
        raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join((*tabulate_formats, *_OWN_FORMATS))}")
    shown = [[display_cell(h, v) for h, v in zip(rows.headers, row, strict=True)] for row in rows.rows]
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

    Columns that say nothing are dropped: ``pool`` when every player is in one pool, ``regularized`` when every
    rating says the same (none needed the prior, or all did: :func:`rating_notes` says so under the table).
    """
    headers = list(ratings.headers)
    rows = [list(r) for r in ratings.rows]
    rated = [r for r in rows if r[headers.index("rating")] is not None] if "rating" in headers else rows
    for column in ("pool", "regularized"):
        i = headers.index(column) if column in headers else -1
        if i >= 0 and len({r[i] for r in rated}) <= 1:
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


def rating_notes(rated: RatingTable) -> str:
    """The lines printed under a rating table: :data:`MARGIN_NOTE`, and :data:`REGULARIZED_NOTE` when a rating
    needed virtual draws (for every rating, when the ``regularized`` column is left out because all did)."""
    regularized = {p.regularized for p in rated.players if p.rating is not None}
    if True not in regularized:
        return MARGIN_NOTE
    return MARGIN_NOTE + "\n" + ("" if False in regularized else "every rating is ") + REGULARIZED_NOTE


def standings_table(records: Sequence[GameRecord], names: Sequence[str], rated: RatingTable | None = None) -> TableRows:
    """The results so far: ratings (``rated``, if the caller has fitted them already) plus forfeits."""
    return results_table(
        rating_rows(rating_table(records, names) if rated is None else rated), forfeit_counts(records, names)
    )


def rate_run(outcome: RunOutcome) -> RatingTable:
    """The rating table of a run's games, for its engines. Fit it once where the run ends and pass it to
    :func:`write_standings` and :func:`final_report`: they show it and fit nothing themselves (four fits of every game
    otherwise: standings.txt, .csv and .json, and the report on the terminal)."""
    return rating_table(outcome.records, outcome.spec.names)


def game_comment(record: GameRecord) -> str:
    """The brace comment of a finished game: the reason it ended, e.g. ``time forfeit`` or ``greedy completes an
    alignment``.

    The same words as the PGN Termination tag and the JSON Lines ``termination`` field; a game that ended on the
    board says it as the PGN's last comment and the JSON Lines ``detail`` do (who completed or claimed the
    alignment, or that the board filled: no "QUARTO!", which only strict claims call).
    """
    if record.termination is not Termination.NORMAL:
        return str(record.termination.value)
    if record.detail:
        return record.detail
    if record.result is Result.DRAW:
        return "draw: the board is full"
    winner = record.first if record.result is Result.FIRST_WINS else record.second
    return f"{winner} completes an alignment"


# ----------------------------------------------------------------------------------------------------------------
# Progress


@dataclass(frozen=True, slots=True)
class ProgressEvery:
    """How often a status line is written off a terminal: after so many games, or so many seconds, or both."""

    games: int | None = None
    """Write after this many games (1: one cutechess-style line per game)."""
    seconds: float | None = 60.0
    """Write when this many seconds have passed since the last line."""


def parse_progress_every(text: str) -> ProgressEvery:
    """``100`` (games), ``30s``, ``5m``, or both joined by a comma; raises ValueError naming the problem."""
    games: int | None = None
    seconds: float | None = None
    for part in (p.strip() for p in text.split(",")):
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", part)
        if not m or float(m.group(1)) <= 0:
            raise ValueError(f"--progress-every {text!r}: expected N (games), Ns, Nm or Nh, e.g. 100 or 30s")
        if m.group(2):
            seconds = float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]
        elif "." in m.group(1):
            raise ValueError(f"--progress-every {text!r}: a number of games is a whole number")
        else:
            games = int(m.group(1))
    return ProgressEvery(games, seconds)


def duration(seconds: float) -> str:
    """``H:MM:SS``, as the status lines write elapsed and remaining times."""
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _Tally:
    """What the status line says: counts kept up to date game by game (never recomputed from all records)."""

    def __init__(self, kind: RunKind, names: Sequence[str], total: int | None, done: Sequence[GameRecord]) -> None:
        self.kind = kind
        self.names = list(names)
        self.total = total
        self.done = 0
        self.new = 0
        self.running: set[int] = set()
        self.points = dict.fromkeys(self.names, 0.0)
        self.games = dict.fromkeys(self.names, 0)
        self.wld = [0, 0, 0]  # the first engine's wins, losses, draws (two-engine runs)
        self.forfeits = 0
        self.llr = ""
        self.t0 = time.monotonic()
        for record in done:
            self.count(record)
        self.new = 0

    def count(self, record: GameRecord) -> None:
        self.done += 1
        self.new += 1
        self.running.discard(record.game_id)
        score = record.result.first_score
        if score is not None:
            for name, points in ((record.first, score), (record.second, 1.0 - score)):
                self.points[name] = self.points.get(name, 0.0) + points
                self.games[name] = self.games.get(name, 0) + 1
            mine = score if record.first == self.names[0] else 1.0 - score
            self.wld[0 if mine == 1.0 else 1 if mine == 0.0 else 2] += 1
        if record.termination.is_failure:
            self.forfeits += 1

    def status(self) -> str:
        elapsed = time.monotonic() - self.t0
        rate = self.new / elapsed if elapsed > 0 and self.new else 0.0
        if self.total:
            count = f"{self.done}/{self.total} games ({100 * self.done / self.total:.0f}%)"
            eta = f"ETA {duration((self.total - self.done) / rate)}" if rate else "ETA ?"
        else:
            count, eta = f"{self.done} games", f"elapsed {duration(elapsed)}"
        parts = [f"{count}, {len(self.running)} running"]
        if len(self.names) == 2:
            wins, losses, draws = self.wld
            played = wins + losses + draws
            share = f" ({100 * (wins + draws / 2) / played:.1f}%)" if played else ""
            parts.append(f"{self.names[0]} +{wins} -{losses} ={draws}{share}")
        elif any(self.games.values()):
            leader = max(self.names, key=lambda n: (self.points[n] / self.games[n]) if self.games[n] else -1.0)
            parts.append(f"leader {leader} {100 * self.points[leader] / self.games[leader]:.1f}%")
        if self.llr:
            parts.append(self.llr)
        if self.forfeits:
            parts.append(f"forfeits {self.forfeits}")
        parts.append(f"{rate:.1f} games/s, {eta}")
        return " | ".join(parts)


class LiveProgress:
    """The status line redrawn in place on a terminal; warnings are written above it."""

    def __init__(self, stream: TextIO, tally: _Tally) -> None:
        self.stream = stream
        self.tally = tally
        self._shown = False
        self._last = 0.0

    def started(self, game_id: int) -> None:
        """A game began."""
        self.tally.running.add(game_id)
        self._draw(throttle=True)

    def finished(self, record: GameRecord) -> None:
        """A game is counted."""
        self.tally.count(record)
        self._draw(throttle=True)

    def message(self, text: str) -> None:
        """Clears the status line, writes the text, redraws the status below it."""
        self._clear()
        _write(self.stream, safe_text(text, None) + "\n")
        self._draw()

    def update(self) -> None:
        """Redraws (the SPRT's LLR changed)."""
        self._draw(throttle=True)

    def close(self) -> None:
        """Ends the status line so the next output starts on a fresh line."""
        if self._shown:
            self._draw()
            _write(self.stream, "\n")
            self._shown = False

    def _clear(self) -> None:
        if self._shown:
            _write(self.stream, "\r\x1b[K")

    def _draw(self, throttle: bool = False) -> None:
        now = time.monotonic()
        if throttle and now - self._last < 0.1:  # a terminal needs no more than ten frames a second
            return
        self._last = now
        self._clear()
        # A line wider than the terminal wraps, and \r would then redraw only its last part.
        width = shutil.get_terminal_size().columns - 1
        _write(self.stream, self.tally.status()[:width])
        self._shown = True


class PeriodicProgress:
    """A status line of its own every so many games or seconds (logs, pipes, ``nohup``); see :class:`ProgressEvery`.

    With ``ProgressEvery(games=1)`` each game gets a cutechess-style ``Finished game N (A vs B): RESULT {reason}``.
    """

    def __init__(self, stream: TextIO, tally: _Tally, every: ProgressEvery) -> None:
        self.stream = stream
        self.tally = tally
        self.every = every
        self._since = 0
        self._last = time.monotonic()
        self._milestone = 0

    def started(self, game_id: int) -> None:
        """A game began."""
        self.tally.running.add(game_id)

    def finished(self, record: GameRecord) -> None:
        """A game is counted: a line when one is due."""
        self.tally.count(record)
        self._since += 1
        if self.every.games == 1:
            _write(
                self.stream,
                f"Finished game {record.game_id} ({record.first} vs {record.second}): "
                f"{record.result.value} {{{game_comment(record)}}}\n",
            )
            self._since = 0
            return
        now = time.monotonic()
        due = self.every.games is not None and self._since >= self.every.games
        due = due or (self.every.seconds is not None and now - self._last >= self.every.seconds)
        total = self.tally.total
        if total and self.every.games is None:
            # By default also at every tenth of a known schedule, if it is not flying by (a short run needs none).
            milestone = 10 * self.tally.done // total
            if milestone > self._milestone and now - self._last >= _MILESTONE_GAP_S:
                due = True
                self._milestone = milestone
        if due:
            self._line(now)

    def message(self, text: str) -> None:
        """Writes the text as it is."""
        _write(self.stream, safe_text(text, None) + "\n")

    def update(self) -> None:
        """The SPRT's LLR changed: it shows in the next line."""

    def close(self) -> None:
        """A last status line when games were counted since the previous one."""
        if self._since and self.every.games != 1:
            self._line(time.monotonic())

    def _line(self, now: float) -> None:
        self._since = 0
        self._last = now
        _write(self.stream, f"[{duration(now - self.tally.t0)}] {self.tally.status()}\n")


class _Silent:
    """``--quiet``: no progress at all; warnings still go to the stream."""

    def __init__(self, stream: TextIO, tally: _Tally) -> None:
        self.stream = stream
        self.tally = tally

    def started(self, game_id: int) -> None:
        self.tally.running.add(game_id)

    def finished(self, record: GameRecord) -> None:
        self.tally.count(record)

    def message(self, text: str) -> None:
        _write(self.stream, safe_text(text, None) + "\n")

    def update(self) -> None:
        pass

    def close(self) -> None:
        pass


def _write(stream: TextIO, text: str) -> None:
    # A closed terminal (SIGHUP) or a closed pipe must not turn the end of a run into a traceback.
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass


class RunView:
    """Turns a run's events into progress output and interim tables (the CLI passes it as the callback)."""

    def __init__(
        self,
        stream: TextIO,
        kind: RunKind,
        names: Sequence[str],
        records: Sequence[GameRecord],
        total: int | None,
        *,
        live: bool | None = None,
        every: ProgressEvery | None = None,
        quiet: bool = False,
        fmt: str = "simple",
        interval: int = 0,
    ) -> None:
        """``records``: games already counted (a resume); ``interval``: an interim table every that many games."""
        self.names = list(names)
        self.records = list(records)
        self.tally = _Tally(kind, names, total, records)
        if live is None:
            live = stream.isatty()
        self.progress: LiveProgress | PeriodicProgress | _Silent
        if quiet:
            self.progress = _Silent(stream, self.tally)
        elif live:
            self.progress = LiveProgress(stream, self.tally)
        else:
            self.progress = PeriodicProgress(stream, self.tally, every or ProgressEvery())
        self.fmt = fmt if fmt not in ("csv", "json") else "simple"
        self.interval = 0 if quiet else interval
        self.failures_shown = 0
        from .run import GameEnded, GameFinished, GameStarted, Notice, SprtUpdate  # not at start-up: run imports us

        self._events = (GameStarted, GameEnded, GameFinished, SprtUpdate, Notice)

    def __call__(self, event: object) -> None:
        """Handles one event of :meth:`quarto_arena.arena.run.Run.run`."""
        GameStarted, GameEnded, GameFinished, SprtUpdate, Notice = self._events  # imported once (3 events a game)
        if isinstance(event, GameStarted):
            self.progress.started(event.game.game_id)
        elif isinstance(event, GameEnded):
            self.tally.running.discard(event.game.game_id)  # played; counted once synced
        elif isinstance(event, GameFinished):
            self.records.append(event.record)
            self.progress.finished(event.record)
            total = event.total
            if self.interval and event.done % self.interval == 0 and (total is None or event.done < total):
                title = f"Rating after {event.done} games:" if total is None else interim_title(event.done, total)
                self.progress.message(title + "\n" + format_table(standings_table(self.records, self.names), self.fmt))
        elif isinstance(event, SprtUpdate):
            self.tally.llr = f"LLR {event.progress.status.llr:.2f} ({event.progress.status.lower:.2f}, " + (
                f"{event.progress.status.upper:.2f})"
            )
            self.progress.update()
        elif isinstance(event, Notice):
            if event.failure is None:
                self.progress.message(f"warning: {event.text}")
            elif self.failures_shown < _FAILURES_SHOWN:
                self.failures_shown += 1
                more = " (further engine failures are only counted)" if self.failures_shown == _FAILURES_SHOWN else ""
                self.progress.message(f"warning: {event.text}{more}")

    def close(self) -> None:
        """Ends the progress output."""
        self.progress.close()


def interim_title(done: int, total: int) -> str:
    """The line above an interim table."""
    return f"Rating after {done} of {total} games:"


# ----------------------------------------------------------------------------------------------------------------
# The report a run ends with


def match_figures(summary: MatchSummary) -> tuple[str, str, str]:
    """Elo, nElo and LOS as every output prints them, each interval named by what its trials are: Elo from the game
    counts (``95% CI, trinomial``, as fastchess and cutechess); nElo and LOS from the complete colour-swapped pairs
    (``pentanomial``), or from the games while there is no complete pair. The SPRT's line shows the same figures."""
    s = summary
    trinomial = trinomial_stats(s.wins, s.losses, s.draws)
    by_pairs, trials = (
        (pentanomial_stats(s.pentanomial), "pentanomial") if sum(s.pentanomial) else (trinomial, "trinomial")
    )
    return named(trinomial.elo, "trinomial"), named(by_pairs.nelo, trials), f"{100 * by_pairs.los:.1f} %"


def match_lines(summary: MatchSummary) -> list[str]:
    """The statistics of a two-engine match, from the first engine's side: W/L/D, pairs, Elo, nElo, LOS.

    Elo and its interval come from the game counts; normalized Elo and LOS from the pentanomial pair counts when
    there are complete pairs (colour-swapped pairs are the real trials), else from the game counts. An estimate
    is printed as ``+40.7 +/- 30.4 (95% CI, trinomial)`` where fishtest's normal interval exists, else as its 95%
    interval or bound (``+0.0 (95% CI -392.5 to +392.5, trinomial)``, ``> +316.6 (95% bound, trinomial)``): never an
    infinity (see :mod:`quarto_arena.arena.stats.match`).
    """
    s = summary
    lines = [f"Score of {s.engine} vs {s.opponent}: {s.wins} - {s.losses} - {s.draws}  [{s.score:.3f}] {s.games}"]
    if not s.games:
        return lines
    elo, nelo, los = match_figures(s)
    lines.append(f"Elo difference: {elo}, nElo: {nelo}, LOS: {los}")
    pairs = sum(s.pentanomial)
    if pairs:
        ll, ld, wl_dd, wd, ww = s.pentanomial
        counted = f"{pairs} pair" if pairs == 1 else f"{pairs} pairs"
        lines.append(f"Pairs [LL, LD, WL+DD, WD, WW]: [{ll}, {ld}, {wl_dd}, {wd}, {ww}]  ({counted})")
    for engine, reasons in sorted(s.forfeits.items()):
        lines.append(f"Forfeits by {engine}: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())))
    return lines


def verdict_line(outcome: RunOutcome) -> str:
    """The SPRT's last line: what was decided, and what the exit status will say."""
    from .run import Verdict

    new = outcome.spec.names[0]
    failure = outcome.failure
    texts = {
        Verdict.H1: f"H1 accepted: {new} passes",
        Verdict.H0: f"H0 accepted: {new} fails (regression, or not the improvement tested for)",
        Verdict.NO_DECISION: f"no decision after {len(outcome.records)} games (--max-games {outcome.total})",
        Verdict.ENGINE_FAILURE: "engine failure: "
        + ("" if failure is None else f"game {failure.game_id}: {failure.detail}"),
    }
    verdict = outcome.verdict
    return "not decided yet (interrupted)" if verdict is None else texts[verdict]


def final_report(outcome: RunOutcome, rated: RatingTable, fmt: str = "simple") -> str:
    """The text a run ends with: the table and crosstable, or the match statistics, and the SPRT's verdict.

    ``rated`` is the run's rating table (:func:`rate_run`). With ``csv`` or ``json`` only the results table, in that
    format (machine-readable standard output).
    """
    from .run import RunKind, Verdict

    spec = outcome.spec
    records = list(outcome.records)
    names = spec.names
    table = standings_table(records, names, rated)
    if fmt in ("csv", "json"):
        return format_table(table, fmt)
    parts: list[str] = []
    if spec.kind is RunKind.TOURNAMENT:
        parts.append(format_table(table, fmt) + "\n" + rating_notes(rated))
        if len(names) == 2:
            parts.append("\n".join(match_lines(summarize(records, *names))))
        else:
            parts.append(format_table(crosstable_rows(rated), fmt))
    else:
        parts.append("\n".join(match_lines(summarize(records, *names))))
    if spec.kind is RunKind.SPRT and outcome.sprt is not None:
        # A run stopped by an engine failure says so on standard error (the command's error line), not here.
        decided = "" if outcome.verdict is Verdict.ENGINE_FAILURE else "\n" + verdict_line(outcome)
        parts.append(outcome.sprt.line() + decided)
    return "\n\n".join(parts)


def _standings_json(outcome: RunOutcome, rated: RatingTable) -> dict[str, Any]:
    spec = outcome.spec
    records = list(outcome.records)
    out: dict[str, Any] = {
        "kind": spec.kind.value,
        "engines": spec.names,
        "games": len(records),
        "scheduled": outcome.total,
        "complete": outcome.complete,
        "interrupted": outcome.interrupted is not None,
        "table": json.loads(format_table(standings_table(records, spec.names, rated), "json")),
    }
    if len(spec.names) == 2:
        s = summarize(records, *spec.names)
        elo, nelo, los = match_figures(s) if s.games else (None, None, None)
        out["match"] = {
            "wins": s.wins,
            "losses": s.losses,
            "draws": s.draws,
            "pentanomial": list(s.pentanomial),
            "elo": elo,
            "nelo": nelo,
            "los": los,
        }
    if outcome.sprt is not None and spec.sprt is not None:
        status = outcome.sprt.status
        verdict = outcome.verdict
        out["sprt"] = {
            "elo0": spec.sprt.elo0,
            "elo1": spec.sprt.elo1,
            "model": spec.sprt.model.value,
            "llr": status.llr,
            "lower": status.lower,
            "upper": status.upper,
            "verdict": None if verdict is None else verdict.value,
        }
    return out


def write_standings(directory: Path, outcome: RunOutcome, rated: RatingTable) -> None:
    """Writes ``standings.txt`` (the final report), ``standings.csv`` and ``standings.json`` into ``directory``;
    ``rated`` is the run's rating table (:func:`rate_run`)."""
    records = list(outcome.records)
    table = standings_table(records, outcome.spec.names, rated)
    files = {
        "standings.txt": final_report(outcome, rated) + "\n",
        "standings.csv": format_table(table, "csv") + "\n",
        "standings.json": json.dumps(_standings_json(outcome, rated), indent=2) + "\n",
    }
    for name, text in files.items():
        tmp = directory / (name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(directory / name)
