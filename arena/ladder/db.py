"""The ladder's database, ``DIR/ladder.db`` (SQLite in WAL mode): this module owns every SQL statement; the rest of
the ladder sees plain records (:class:`BotRow`, :class:`VersionRow`, :class:`ResultRow`, GameRecord).

Counting. A game counts once the transaction that inserts it commits (``synchronous=FULL``: the commit is on disk
when :meth:`LadderDB.add_game` returns). A ladder killed at any moment loses at most the games not yet committed,
and a game is inserted exactly once: nothing is ever replayed from elsewhere. The schema (the README's copy is
for users of ``sqlite3 DIR/ladder.db``)::

    settings(key TEXT PRIMARY KEY, value TEXT)        the ladder's settings, each value JSON
    bots(id, name UNIQUE, house, first_seen, last_seen)
                                                      a bot is its key's name (house: 1 for --house engines)
    versions(id, bot -> bots, number, id_name, author, first_seen, UNIQUE(bot, id_name, author))
                                                      what a bot called itself (id name, id author); number 1, 2...
    games(id, pair, first -> bots, second -> bots, first_version -> versions, second_version -> versions,
          result '1-0'|'0-1'|'1/2-1/2', termination, detail, started, finished, variant, time_control,
          start, opening JSON, turns JSON [[token, ms, score], ...], exit_info JSON, engines JSON)
                                                      every counted game; id is the order they were counted
    abandoned(id, pair, first -> bots, second -> bots, started, reason, record JSON)
                                                      games in flight when a key was removed or the ladder stopped
"""

from __future__ import annotations

import datetime
import json
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import ArenaError, ArenaFault
from ..records import EngineIdentity, GameRecord, Result, Termination, TurnRecord

__all__ = ["DB_NAME", "BotRow", "LadderDB", "LadderDBError", "ResultRow", "TallyRow", "VersionRow"]

DB_NAME: Final = "ladder.db"
#: Bumped when the schema changes; a ladder.db of another version is refused, not rewritten.
SCHEMA_VERSION: Final = 1

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bots (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    house INTEGER NOT NULL DEFAULT 0,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY,
    bot INTEGER NOT NULL REFERENCES bots(id),
    number INTEGER NOT NULL,
    id_name TEXT NOT NULL,
    author TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    UNIQUE (bot, id_name, author)
);
CREATE TABLE IF NOT EXISTS games (
    id INTEGER PRIMARY KEY,
    pair INTEGER NOT NULL,
    first INTEGER NOT NULL REFERENCES bots(id),
    second INTEGER NOT NULL REFERENCES bots(id),
    first_version INTEGER NOT NULL REFERENCES versions(id),
    second_version INTEGER NOT NULL REFERENCES versions(id),
    result TEXT NOT NULL,
    termination TEXT NOT NULL,
    detail TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    variant TEXT NOT NULL,
    time_control TEXT NOT NULL,
    start TEXT NOT NULL,
    opening TEXT NOT NULL,
    turns TEXT NOT NULL,
    exit_info TEXT NOT NULL,
    engines TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS games_first ON games(first);
CREATE INDEX IF NOT EXISTS games_second ON games(second);
CREATE INDEX IF NOT EXISTS games_tally ON games(first, second, first_version, second_version, result);
CREATE TABLE IF NOT EXISTS abandoned (
    id INTEGER PRIMARY KEY,
    pair INTEGER NOT NULL,
    first INTEGER NOT NULL REFERENCES bots(id),
    second INTEGER NOT NULL REFERENCES bots(id),
    started TEXT NOT NULL,
    reason TEXT NOT NULL,
    record TEXT NOT NULL
);
"""

_INSERT_GAME: Final = (
    "INSERT INTO games (pair, first, second, first_version, second_version, result, termination, detail,"
    " started, finished, variant, time_control, start, opening, turns, exit_info, engines)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_GAME_COLUMNS: Final = (
    "g.id, g.pair, fb.name, sb.name, g.result, g.termination, g.detail, g.started, g.variant, g.time_control,"
    " g.start, g.opening, g.turns, g.exit_info, g.engines"
)
_GAME_JOIN: Final = "games g JOIN bots fb ON fb.id = g.first JOIN bots sb ON sb.id = g.second"


class LadderDBError(ArenaError):
    """A ladder database that cannot be opened, read or written; one line naming the file."""

    reason = "ladder_db"


@dataclass(frozen=True, slots=True)
class VersionRow:
    """One version of a bot: what it called itself."""

    number: int
    """1 for the bot's first version, 2 for the next one seen..."""
    id_name: str
    """Its ``id name`` ('' when it sent none)."""
    author: str
    """Its ``id author`` ('')."""
    first_seen: str
    """UTC time of its first counted game, ISO 8601."""


@dataclass(frozen=True, slots=True)
class BotRow:
    """One bot of the ladder."""

    name: str
    """Its key's name (a house engine's display name)."""
    house: bool
    """True for a ``--house`` engine (always online)."""
    first_seen: str
    """UTC time it first connected (or the ladder first started, for a house engine)."""
    last_seen: str
    """UTC time it was last seen connected or playing."""
    versions: tuple[VersionRow, ...]
    """Its versions, oldest first."""


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One counted game as the ratings and the matchmaking see it."""

    id: int
    """The game's number."""
    first: str
    """Bot that gave the first piece."""
    second: str
    """The other bot."""
    first_version: int
    """The first bot's version number."""
    second_version: int
    """The second bot's version number."""
    score: float
    """The first bot's points: 1, 1/2 or 0."""
    count: int = 1
    """How many such games this row stands for (:meth:`LadderDB.tallies`; ``id`` is then the last one's)."""


@dataclass(frozen=True, slots=True)
class TallyRow:
    """Counted games of two versions, one colour each, with one result and termination."""

    first: str
    """Bot that gave the first piece."""
    second: str
    """The other bot."""
    first_version: int
    """The first bot's version number."""
    second_version: int
    """The second bot's version number."""
    result: Result
    """The result, from the first bot's side."""
    termination: Termination
    """How the games ended."""
    count: int
    """How many games."""

    @property
    def score(self) -> float | None:
        """The first bot's points per game."""
        return self.result.first_score


def now() -> str:
    """UTC now, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LadderDB:
    """One connection to ``DIR/ladder.db``; use from one thread at a time (the ladder gives it a thread of its own).

    :meth:`open` creates the database (or opens one a ladder made); every write is one transaction.
    """

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection
        self._bots: dict[str, int] = {}
        self._versions: dict[tuple[int, str, str], int] = {}
        self._latest: dict[int, int] = {}

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> LadderDB:
        """Opens (``create``: or creates) the database; :class:`LadderDBError` for one that is not a ladder's."""
        if not create and not path.is_file():
            raise LadderDBError(f"{path}: no ladder here (start one with: quarto-arena ladder run {path.parent} ...)")
        try:
            connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        except sqlite3.Error as e:
            raise LadderDBError(f"{path}: cannot open the database: {e}") from None
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("PRAGMA foreign_keys=ON")
            version = int(connection.execute("PRAGMA user_version").fetchone()[0])
            tables = connection.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            if version == 0 and tables == 0:
                connection.executescript(f"BEGIN; {_SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            elif version == SCHEMA_VERSION:
                connection.executescript(_SCHEMA)  # what a later release of the same schema added (indexes)
            else:
                raise LadderDBError(
                    f"{path}: not a ladder database of this quarto-arena (schema {version}, this one reads"
                    f" {SCHEMA_VERSION})"
                )
        except sqlite3.Error as e:
            connection.close()
            raise LadderDBError(f"{path}: not a ladder database: {e}") from None
        except LadderDBError:
            connection.close()
            raise
        db = cls(path, connection)
        for bot_id, name in connection.execute("SELECT id, name FROM bots"):
            db._bots[name] = bot_id
        for version_id, bot, id_name, author in connection.execute(
            "SELECT id, bot, id_name, author FROM versions ORDER BY number"
        ):
            db._versions[(bot, id_name, author)] = version_id
            db._latest[bot] = version_id
        return db

    def close(self) -> None:
        """Closes the connection (every committed game is on disk already)."""
        self._db.close()

    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> list[int]:
        """Runs ``statements`` in one transaction; returns each one's last row id."""
        ids = []
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    ids.append(int(self._db.execute(sql, args).lastrowid or 0))
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # SQLite rolls back by itself after some errors (a full disk)
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                raise ArenaFault(f"{self.path}: the disk is full: {e}") from None
            raise LadderDBError(f"{self.path}: cannot write: {e}") from None
        return ids

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise LadderDBError(f"{self.path}: cannot read: {e}") from None

    # --- settings

    def settings(self) -> dict[str, Any]:
        """The ladder's settings as they were saved (empty for a new ladder)."""
        return {key: json.loads(value) for key, value in self._read("SELECT key, value FROM settings")}

    def save_settings(self, settings: Mapping[str, Any]) -> None:
        """Saves (replaces) the ladder's settings."""
        sql = "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)"
        self._write([(sql, (key, json.dumps(value))) for key, value in settings.items()])

    # --- bots

    def bot(self, name: str, *, house: bool = False) -> int:
        """The id of bot ``name``, added now if new."""
        bot_id = self._bots.get(name)
        if bot_id is None:
            when = now()
            sql = "INSERT INTO bots (name, house, first_seen, last_seen) VALUES (?, ?, ?, ?)"
            bot_id = self._write([(sql, (name, int(house), when, when))])[0]
            self._bots[name] = bot_id
        return bot_id

    def seen(self, names: list[str]) -> None:
        """Notes that these bots are connected now (their ``last_seen``)."""
        when = now()
        self._write([("UPDATE bots SET last_seen = ? WHERE id = ?", (when, self.bot(n))) for n in names])

    def bots(self) -> list[BotRow]:
        """Every bot, with its versions, in the order they came."""
        versions: dict[int, list[VersionRow]] = {}
        for bot, number, id_name, author, first_seen in self._read(
            "SELECT bot, number, id_name, author, first_seen FROM versions ORDER BY bot, number"
        ):
            versions.setdefault(bot, []).append(VersionRow(number, id_name, author, first_seen))
        return [
            BotRow(name, bool(house), first, last, tuple(versions.get(bot_id, ())))
            for bot_id, name, house, first, last in self._read(
                "SELECT id, name, house, first_seen, last_seen FROM bots ORDER BY id"
            )
        ]

    # --- games

    def _version(self, bot: int, ident: EngineIdentity | None, when: str) -> int:
        """The id of the bot's version ``ident``, added (its own transaction: games refer to it) when new. An engine
        that never finished its handshake said nothing of itself: its game goes to the bot's latest version."""
        if (ident is None or ident.protocol is None) and (latest := self._latest.get(bot)) is not None:
            return latest
        id_name = (ident.id_name if ident else None) or ""
        author = (ident.author if ident else None) or ""
        key = (bot, id_name, author)
        known = self._versions.get(key)
        if known is not None:
            self._latest[bot] = known
        else:
            sql = (
                "INSERT INTO versions (bot, number, id_name, author, first_seen)"
                " VALUES (?, (SELECT count(*) + 1 FROM versions WHERE bot = ?), ?, ?, ?)"
            )
            known = self._versions[key] = self._write([(sql, (bot, bot, id_name, author, when))])[0]
            self._latest[bot] = known
        return known

    def add_game(self, record: GameRecord, pair: int) -> int:
        """Counts a finished game (one transaction, on disk when this returns); returns its number."""
        return self.add_games([(record, pair)])[0]

    def add_games(self, games: list[tuple[GameRecord, int]]) -> list[int]:
        """Counts finished games (record, pair) in one transaction, on disk when this returns; their numbers."""
        when = now()
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for record, pair in games:
            first, second = self.bot(record.first), self.bot(record.second)
            idents = [*list(record.engines), None, None]
            versions = [self._version(bot, ident, when) for bot, ident in ((first, idents[0]), (second, idents[1]))]
            statements.append((_INSERT_GAME, (pair, first, second, *versions, *_game_fields(record, when))))
            statements.append(("UPDATE bots SET last_seen = ? WHERE id IN (?, ?)", (when, first, second)))
        return self._write(statements)[::2]

    def add_abandoned(self, record: GameRecord, pair: int, reason: str) -> None:
        """Keeps a game abandoned in flight (not counted)."""
        first, second = self.bot(record.first), self.bot(record.second)
        sql = "INSERT INTO abandoned (pair, first, second, started, reason, record) VALUES (?, ?, ?, ?, ?, ?)"
        self._write([(sql, (pair, first, second, record.started or now(), reason, json.dumps(record.to_dict())))])

    def count(self) -> int:
        """Games counted."""
        return int(self._read("SELECT count(*) FROM games")[0][0])

    def last_pair(self) -> int:
        """The highest pair number of a counted game (0 for none)."""
        return int(self._read("SELECT coalesce(max(pair), 0) FROM games")[0][0])

    def results(self, since: int = 0) -> list[ResultRow]:
        """Every counted game after number ``since``, in order, as the ratings see it (scored games only)."""
        # The games table alone, with the few bots and versions looked up here: a join per row costs more.
        names = dict(self._read("SELECT id, name FROM bots"))
        numbers = dict(self._read("SELECT id, number FROM versions"))
        rows = self._read(
            "SELECT id, first, second, first_version, second_version, result FROM games WHERE id > ? ORDER BY id",
            (since,),
        )
        scores = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}
        return [
            ResultRow(game_id, names[first], names[second], numbers[fv], numbers[sv], scores[result])
            for game_id, first, second, fv, sv, result in rows
            if result in scores
        ]

    def tallies(self) -> list[ResultRow]:
        """Every counted game, as ratings need them when the order does not matter: one row per two versions, colours
        and result, with its count (a few thousand rows for a hundred bots, whatever the number of games)."""
        names = dict(self._read("SELECT id, name FROM bots"))
        numbers = dict(self._read("SELECT id, number FROM versions"))
        rows = self._read(
            "SELECT max(id), first, second, first_version, second_version, result, count(*) FROM games"
            " GROUP BY first, second, first_version, second_version, result"
        )
        scores = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}
        return [
            ResultRow(last, names[first], names[second], numbers[fv], numbers[sv], scores[result], n)
            for last, first, second, fv, sv, result, n in rows
            if result in scores
        ]

    def game(self, game_id: int) -> GameRecord | None:
        """Counted game number ``game_id``, or None."""
        rows = self._read(f"SELECT {_GAME_COLUMNS} FROM {_GAME_JOIN} WHERE g.id = ?", (game_id,))
        return _record(rows[0]) if rows else None

    def recent(self, limit: int, bot: str | None = None) -> list[GameRecord]:
        """The last ``limit`` counted games (of ``bot``, when given), newest first."""
        where, args = ("1", ()) if bot is None else self._of_bot(bot, 0, limit, newest=True)
        rows = self._read(
            f"SELECT {_GAME_COLUMNS} FROM {_GAME_JOIN} WHERE {where} ORDER BY g.id DESC LIMIT ?", (*args, limit)
        )
        return [_record(r) for r in rows]

    def games(self, batch: int = 1000) -> Iterator[tuple[GameRecord, int, int]]:
        """Every counted game in order with the version numbers of first and second, read ``batch`` at a time."""
        last = 0
        while page := self.games_after(last, batch):
            yield from page
            last = page[-1][0].game_id

    def games_after(self, since: int, limit: int, bot: str | None = None) -> list[tuple[GameRecord, int, int]]:
        """The first ``limit`` counted games after number ``since`` (of ``bot``, when given), in order, with the
        version numbers of first and second."""
        where, args = ("g.id > ?", (since,)) if bot is None else self._of_bot(bot, since, limit, newest=False)
        rows = self._read(
            f"SELECT {_GAME_COLUMNS}, fv.number, sv.number FROM {_GAME_JOIN}"
            " JOIN versions fv ON fv.id = g.first_version JOIN versions sv ON sv.id = g.second_version"
            f" WHERE {where} ORDER BY g.id LIMIT ?",
            (*args, limit),
        )
        return [(_record(row[:-2]), int(row[-2]), int(row[-1])) for row in rows]

    def bot_tallies(self, bot: str) -> list[TallyRow]:
        """The games of ``bot`` counted by versions, colours, result and termination (its two index ranges)."""
        bot_id = self._bot_id(bot)
        rows = self._read(
            "SELECT fb.name, sb.name, fv.number, sv.number, t.result, t.termination, t.n FROM (SELECT first,"
            " second, first_version, second_version, result, termination, count(*) AS n FROM games"
            " WHERE first = ? OR second = ? GROUP BY first, second, first_version, second_version, result,"
            " termination) t JOIN bots fb ON fb.id = t.first JOIN bots sb ON sb.id = t.second"
            " JOIN versions fv ON fv.id = t.first_version JOIN versions sv ON sv.id = t.second_version",
            (bot_id, bot_id),
        )
        return [TallyRow(a, b, fv, sv, Result(r), Termination(t), n) for a, b, fv, sv, r, t, n in rows]

    def forfeits(self) -> dict[str, dict[Termination, int]]:
        """Games each bot lost by a forfeit, by reason."""
        rows = self._read(
            "SELECT b.name, t.termination, t.n FROM (SELECT first AS bot, termination, count(*) AS n FROM games"
            " WHERE result = '0-1' AND termination != 'normal' GROUP BY first, termination UNION ALL"
            " SELECT second, termination, count(*) FROM games WHERE result = '1-0' AND termination != 'normal'"
            " GROUP BY second, termination) t JOIN bots b ON b.id = t.bot"
        )
        out: dict[str, dict[Termination, int]] = {}
        for name, termination, n in rows:
            reason = Termination(termination)
            if reason.is_failure:
                by = out.setdefault(name, {})
                by[reason] = by.get(reason, 0) + n
        return out

    def _bot_id(self, name: str) -> int:
        """Bot ``name``'s id (-1 for none), read by name: another connection (the ladder's) may have added it."""
        found = self._read("SELECT id FROM bots WHERE name = ?", (name,))
        return int(found[0][0]) if found else -1

    def _of_bot(self, bot: str, since: int, limit: int, *, newest: bool) -> tuple[str, tuple[Any, ...]]:
        """The condition (and its arguments) for the first (``newest``: last) ``limit`` games of ``bot`` after number
        ``since``: two index ranges, the bot as first and as second, rather than every game of either side read and
        sorted (0.3 ms rather than 24 ms for a bot of 2,000 games in a million, benchmarks/ladder_pages.py)."""
        part = f"SELECT id FROM games WHERE {{}} = ? AND id > ? ORDER BY id {'DESC' if newest else ''} LIMIT ?"
        bot_id = self._bot_id(bot)
        union = f"SELECT * FROM ({part.format('first')}) UNION SELECT * FROM ({part.format('second')})"
        return f"g.id IN ({union})", (bot_id, since, limit, bot_id, since, limit)


def _game_fields(record: GameRecord, finished: str) -> tuple[Any, ...]:
    """The columns of a game from ``result`` on."""
    return (
        record.result.value,
        record.termination.value,
        record.detail,
        record.started,
        finished,
        record.variant,
        record.time_control,
        record.start,
        json.dumps(list(record.opening)),
        json.dumps([[t.token, t.ms, t.score] for t in record.turns], separators=(",", ":")),
        json.dumps(record.exit_info),
        json.dumps([e.to_dict() for e in record.engines], separators=(",", ":")),
    )


def _record(row: tuple[Any, ...]) -> GameRecord:
    (game_id, pair, first, second, result, termination, detail, started, variant, tc, start, opening, turns,
     exit_info, engines) = row  # fmt: skip
    return GameRecord(
        first=first,
        second=second,
        result=Result(result),
        termination=Termination(termination),
        detail=detail,
        variant=variant,
        time_control=tc,
        start=start,
        opening=tuple(json.loads(opening)),
        turns=tuple(TurnRecord(str(t), int(ms), s) for t, ms, s in json.loads(turns)),
        game_id=game_id,
        round=pair,
        started=started,
        exit_info=dict(json.loads(exit_info)),
        engines=tuple(EngineIdentity.from_dict(e) for e in json.loads(engines)),
    )
