"""The ladder's database, ``DIR/ladder.db`` (SQLite in WAL mode): this module owns every query (the schema and its
migrations are :mod:`.schema`); the rest of the ladder sees plain records (:class:`BotRow`, :class:`TallyRow`,
:class:`LadderState`, GameRecord).

Counting. A game counts once the transaction that inserts it commits (``synchronous=FULL``: the commit is on disk
when :meth:`LadderDB.add_games` returns). The same transaction adds the game to its tally (one row per two versions,
colours, result and termination), so nothing needs to read every game again to know the counts: a ladder of a
million games starts from its tallies and its last stored fit. A ladder killed at any moment loses at most the games
not yet committed, and a game is inserted exactly once.

Checks. Each game row carries the checksum of its record, each tally row the checksum of its count
(:func:`.schema.game_checksum`). A reader verifies what it reads: a tally or a game whose checksum fails is left out
and reported (:attr:`LadderState.damaged`, :meth:`LadderDB.games`), never counted as it now reads; ``ladder check``
verifies everything, ``ladder check --repair`` counts the tallies again from the games that verify. A ladder starts
only after ``PRAGMA quick_check``; ``DIR/ladder.lock`` keeps a second ``ladder run`` off the directory.

Reads are consistent: every reader takes one snapshot (:meth:`LadderDB.snapshot`, one read transaction; WAL lets
the ladder write meanwhile), so bots, versions and tallies always agree.

The schema (the README's copy is for users of ``sqlite3 DIR/ladder.db``)::

    settings(key TEXT PRIMARY KEY, value TEXT)        the ladder's settings, each value JSON
    bots(id, name UNIQUE, house, first_seen, last_seen, origin, key UNIQUE, address, banned)
                                                      a bot is its key's name; origin 'house', 'keys' (the keys
                                                      directory) or 'open' (registered itself: its key and address)
    versions(id, bot -> bots, number, id_name, author, first_seen, retired, UNIQUE(bot, id_name, author))
                                                      what a bot called itself; retired: NULL, 'auto' or 'operator'
    games(id, pair, first -> bots, second -> bots, first_version -> versions, second_version -> versions,
          result '1-0'|'0-1'|'1/2-1/2', termination, detail, started, finished, variant, time_control,
          start, opening JSON, turns JSON [[token, ms, score], ...], exit_info JSON, engines JSON, checksum)
                                                      every counted game; id is the order they were counted
    abandoned(id, pair, first -> bots, second -> bots, started, reason, record JSON)
                                                      games in flight when a bot was cut or the ladder stopped
    tallies(first_version, second_version, result, termination, count, checksum)
                                                      the counted games, counted
    dodges(id, bot -> bots, opponent -> bots, pair, at, charged, game -> games)
                                                      a bot gone before the second game of its pair
    journal(id, at, action, name, detail)             registrations, bans, unbans, retirements
    fits(id, through, games, at, anchor), ratings(fit -> fits, bot -> bots, version, rating, margin)
                                                      the ladder's last fits (version 0: a bot's retired versions)
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from ..errors import ArenaError, ArenaFault
from ..records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from .schema import (
    GAME_FIELDS,
    MEETINGS_FROM_TALLIES,
    MEETINGS_OF_TALLIES,
    MIGRATIONS,
    SCHEMA,
    SCHEMA_VERSION,
    game_checksum,
    tally_checksum,
    total_checksum,
    totals_of,
)

__all__ = [
    "DB_NAME",
    "FITS_KEPT",
    "LOCK_NAME",
    "VERSIONS_KEPT",
    "BotRow",
    "CheckReport",
    "DirectoryLock",
    "JournalRow",
    "LadderDB",
    "LadderDBError",
    "LadderState",
    "StoredFit",
    "TallyRow",
    "TotalRow",
    "VersionRow",
]

log = logging.getLogger(__name__)

DB_NAME: Final = "ladder.db"
LOCK_NAME: Final = "ladder.lock"
VERSIONS_KEPT: Final = 4
"""Versions of one bot on the board at once: a new version beyond them retires the bot's oldest (automatically; its
games stay, rated with the bot's other retired versions as one player). A bot that renames itself every game thus
adds a version row per game at most, and at most this many players (plus one) to the fit."""
FITS_KEPT: Final = 100
"""Stored fits kept (every other older one is dropped beyond): the ratings' history, bounded."""
AUTO: Final = "auto"
OPERATOR: Final = "operator"

T = TypeVar("T")


class LadderDBError(ArenaError):
    """A ladder database that cannot be opened, read or written; one line naming the file."""

    reason = "ladder_db"


def now() -> str:
    """UTC now, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    retired: str | None = None
    """None on the board; ``auto`` (beyond :data:`VERSIONS_KEPT`) or ``operator`` (``ladder retire``)."""


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
    origin: str = "keys"
    """``house``, ``keys`` (a key in the keys directory) or ``open`` (it registered itself, ``--open``)."""
    banned: str | None = None
    """None, or why it is banned (``ladder ban``)."""
    address: str = ""
    """Where an ``open`` bot registered from."""
    key: str | None = None
    """The public key (Z85) of an ``open`` bot."""


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
        """The first bot's points per game (None for a game without a result, which a ladder never counts)."""
        return self.result.first_score


@dataclass(frozen=True, slots=True)
class TotalRow:
    """A version's counted games that ended one way (a termination), from its side."""

    bot: str
    version: int
    """The version's number."""
    termination: Termination
    wins: int
    draws: int
    losses: int


@dataclass(frozen=True, slots=True)
class StoredFit:
    """The ratings of one fit, as the ladder stored them."""

    through: int
    """The last game (by number) the fit saw."""
    games: int
    """Games fitted."""
    at: str
    """When it was fitted (UTC)."""
    anchor: tuple[str, float] | None
    """The anchor it was fitted with (a player's name and rating), or None (the pool's average is 0)."""
    ratings: Mapping[tuple[str, int], tuple[float, float]]
    """(bot, version number; 0 for the bot's retired versions together) -> (rating, margin)."""


@dataclass(frozen=True, slots=True)
class LadderState:
    """What the standings need, read in one snapshot."""

    settings: Mapping[str, Any]
    """The ladder's settings."""
    bots: tuple[BotRow, ...]
    """Every bot, in the order they came."""
    totals: tuple[TotalRow, ...]
    """Every version's totals whose checksum holds."""
    opponents: Mapping[tuple[str, int], int]
    """Different bots each player has met: (bot, version number; 0 for its retired versions together) -> count."""
    tallies: tuple[TallyRow, ...]
    """Every tally whose checksum holds (read only when asked: what a fit needs)."""
    tally_rows: int
    """Tallies in the database (what a fit would read)."""
    counted: int
    """Games counted."""
    last: int
    """The number of the last game counted (0 for none)."""
    fit: StoredFit | None
    """The last fit stored (None before the first)."""
    dodges: Mapping[str, tuple[int, int]]
    """Per bot: (dodges charged as lost games, mid-pair leaves let go)."""
    damaged: tuple[str, ...] = ()
    """Tallies and totals left out because their checksum failed, described (``ladder check DIR --repair``)."""


@dataclass(frozen=True, slots=True)
class JournalRow:
    """One line of the ladder's journal: a registration or a moderation."""

    id: int
    at: str
    action: str
    """``register``, ``ban``, ``unban``, ``retire``."""
    name: str
    """The bot (``NAME#N`` for a retirement)."""
    detail: str


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What ``ladder check`` found."""

    integrity: tuple[str, ...]
    """``PRAGMA integrity_check``'s lines (``('ok',)`` when whole)."""
    games: int
    """Games read."""
    bad_games: tuple[int, ...]
    """Games whose checksum fails (changed since they were counted)."""
    bad_tallies: tuple[str, ...]
    """Tallies and versions' totals whose checksum fails, or whose counts differ from the games that verify."""

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return self.integrity == ("ok",) and not self.bad_games and not self.bad_tallies


@dataclass(slots=True)
class _Staged:
    """Ids learned inside a transaction, remembered once it commits."""

    bots: dict[str, int] = field(default_factory=dict)
    versions: dict[tuple[int, str, str], int] = field(default_factory=dict)
    latest: dict[int, int] = field(default_factory=dict)


class DirectoryLock:
    """``DIR/ladder.lock``, held (``flock``) by the one ``ladder run`` of a directory for as long as it runs."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Takes the lock; :class:`LadderDBError` (one line) when another process holds it."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise LadderDBError(f"{self.path}: cannot open the ladder's lock: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise LadderDBError(
                f"{self.path.parent}: another ladder runs on this directory (pid {holder}): stop it first"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Lets the lock go (the file stays: removing it could let two processes hold two locks)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class LadderDB:
    """One connection to ``DIR/ladder.db``; use from one thread at a time (the ladder gives it a thread of its own).

    :meth:`open` creates the database (or opens, and with ``migrate`` migrates, one a ladder made); every write is
    one transaction; :meth:`snapshot` makes several reads one.
    """

    def __init__(self, path: Path, connection: sqlite3.Connection, *, created: bool = False) -> None:
        self.path = path
        self.created = created
        """True when :meth:`open` made the file (a ladder that then fails to start removes it)."""
        self._db = connection
        self._bots: dict[str, int] = {}
        self._versions: dict[tuple[int, str, str], int] = {}
        self._latest: dict[int, int] = {}
        self._staged: _Staged | None = None

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        create: bool = True,
        migrate: bool = False,
        check: bool = False,
        progress: Callable[[str], None] = lambda _line: None,
    ) -> LadderDB:
        """:meth:`connect`, then :meth:`prepare`."""
        db = cls.connect(path, create=create)
        try:
            db.prepare(migrate=migrate, check=check, progress=progress)
        except BaseException:
            db.close()
            raise
        return db

    @classmethod
    def connect(cls, path: Path, *, create: bool = True) -> LadderDB:
        """A connection to the database (``create``: a new file where there is none); nothing read yet, so that
        :meth:`prepare` can be interrupted (:meth:`interrupt`)."""
        exists = path.exists()
        if not exists and not create:
            raise LadderDBError(f"{path}: no ladder here (start one with: quarto-arena ladder run {path.parent} ...)")
        if exists and path.is_file() and path.stat().st_size == 0:
            raise LadderDBError(f"{path}: an empty file, not a ladder database (remove it to start a new ladder)")
        try:
            connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        except sqlite3.Error as e:
            raise LadderDBError(f"{path}: cannot open the database: {e}") from None
        return cls(path, connection, created=not exists)

    def prepare(
        self, *, migrate: bool = False, check: bool = False, progress: Callable[[str], None] = lambda _line: None
    ) -> None:
        """Checks the database (``check``: ``PRAGMA quick_check`` first) and its schema: :class:`LadderDBError` for
        one that is not a ladder's, is damaged or of another schema. A new file gets the schema. ``migrate``: an
        earlier schema is migrated in place after a backup next to it (``progress`` hears how it goes); without it,
        refused."""
        path, connection = self.path, self._db
        try:
            if check:
                found = [str(r[0]) for r in connection.execute("PRAGMA quick_check(5)")]
                if found != ["ok"]:
                    raise LadderDBError(
                        f"{path}: the database is damaged ({'; '.join(found)[:300]}): restore a backup"
                        " (ladder backup), or see what is left with: quarto-arena ladder check"
                    )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("PRAGMA foreign_keys=ON")
            version = int(connection.execute("PRAGMA user_version").fetchone()[0])
            tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if version == 0 and not tables and self.created:
                connection.executescript(f"BEGIN; {SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            elif version == 0 or not {"bots", "versions", "games"} <= tables:
                raise LadderDBError(f"{path}: not a ladder database (no ladder's tables in it)")
            elif version > SCHEMA_VERSION:
                raise LadderDBError(
                    f"{path}: the database of a later quarto-arena (schema {version}; this one reads up to"
                    f" {SCHEMA_VERSION}): upgrade quarto-arena"
                )
            elif version < SCHEMA_VERSION:
                if not migrate:
                    raise LadderDBError(
                        f"{path}: the database of an earlier quarto-arena (schema {version}): `quarto-arena ladder"
                        f" run {path.parent} ...` migrates it in place (after a backup next to it)"
                    )
                _migrate(connection, path, version, progress)
        except sqlite3.Error as e:
            if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT:
                raise LadderDBError(f"{path}: interrupted") from None
            raise LadderDBError(f"{path}: not a ladder database, or a damaged one: {e}") from None

    def close(self) -> None:
        """Closes the connection (every committed game is on disk already)."""
        self._db.close()

    def interrupt(self) -> None:
        """Stops the statement running on this connection now (from any thread): a ladder asked to stop while it
        reads a large database stops at once; the interrupted call raises :class:`LadderDBError`."""
        with contextlib.suppress(sqlite3.Error):
            self._db.interrupt()

    # --- transactions

    def _transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Runs ``work`` in one write transaction; the ids it learned are remembered once it commits."""
        self._staged = _Staged()
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                out = work(self._db)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # SQLite rolls back by itself after some errors (a full disk)
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                raise ArenaFault(f"{self.path}: the disk is full: {e}") from None
            raise LadderDBError(f"{self.path}: cannot write: {e}") from None
        finally:
            staged, self._staged = self._staged, None
        self._bots.update(staged.bots)
        self._versions.update(staged.versions)
        self._latest.update(staged.latest)
        return out

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise LadderDBError(f"{self.path}: cannot read: {e}") from None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Makes the reads inside the block one read transaction: they all see the database as it was at the first
        (while the ladder goes on writing, in WAL mode). Nested snapshots are the outer one."""
        if self._db.in_transaction:
            yield
            return
        try:
            self._db.execute("BEGIN")
        except sqlite3.Error as e:
            raise LadderDBError(f"{self.path}: cannot read: {e}") from None
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("COMMIT")

    # --- settings

    def settings(self) -> dict[str, Any]:
        """The ladder's settings as they were saved (empty for a new ladder)."""
        return {key: json.loads(value) for key, value in self._read("SELECT key, value FROM settings")}

    def save_settings(self, settings: Mapping[str, Any]) -> None:
        """Saves (replaces) these settings."""
        sql = "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)"
        self._transaction(lambda c: c.executemany(sql, [(k, json.dumps(v)) for k, v in settings.items()]))

    # --- bots

    def _bot_id(self, c: sqlite3.Connection, name: str, when: str, origin: str = "keys") -> int:
        """The id of bot ``name``, added (inside the caller's transaction) if new."""
        known = self._bots.get(name)
        if known is None and self._staged is not None:
            known = self._staged.bots.get(name)
        if known is not None:
            return known
        row = c.execute("SELECT id FROM bots WHERE name = ?", (name,)).fetchone()
        if row is None:
            sql = "INSERT INTO bots (name, house, first_seen, last_seen, origin) VALUES (?, ?, ?, ?, ?)"
            bot_id = int(c.execute(sql, (name, int(origin == "house"), when, when, origin)).lastrowid or 0)
        else:
            bot_id = int(row[0])
        assert self._staged is not None
        self._staged.bots[name] = bot_id
        return bot_id

    def bot(self, name: str, *, house: bool = False) -> int:
        """The id of bot ``name``, added now if new."""
        when = now()
        return self._transaction(lambda c: self._bot_id(c, name, when, "house" if house else "keys"))

    def seen(self, names: list[str]) -> None:
        """Notes that these bots are connected now (their ``last_seen``)."""
        when = now()

        def work(c: sqlite3.Connection) -> None:
            for name in names:
                c.execute("UPDATE bots SET last_seen = ? WHERE id = ?", (when, self._bot_id(c, name, when)))

        self._transaction(work)

    def bots(self) -> list[BotRow]:
        """Every bot, with its versions, in the order they came."""
        versions: dict[int, list[VersionRow]] = {}
        for bot, number, id_name, author, first_seen, retired in self._read(
            "SELECT bot, number, id_name, author, first_seen, retired FROM versions ORDER BY bot, number"
        ):
            versions.setdefault(bot, []).append(VersionRow(number, id_name, author, first_seen, retired))
        return [
            BotRow(name, bool(house), first, last, tuple(versions.get(bot_id, ())), origin, banned, address, key)
            for bot_id, name, house, first, last, origin, banned, address, key in self._read(
                "SELECT id, name, house, first_seen, last_seen, origin, banned, address, key FROM bots ORDER BY id"
            )
        ]

    def registered(self) -> dict[str, str]:
        """The bots that registered themselves (``--open``): name -> public key (Z85)."""
        return {name: key for name, key in self._read("SELECT name, key FROM bots WHERE key IS NOT NULL")}

    def register(self, name: str, key: str, address: str) -> None:
        """Registers an ``open`` bot: ``name`` belongs to ``key`` from now on (journalled with its address)."""
        when = now()

        def work(c: sqlite3.Connection) -> None:
            sql = "INSERT INTO bots (name, first_seen, last_seen, origin, key, address) VALUES (?, ?, ?, 'open', ?, ?)"
            self._staged.bots[name] = int(c.execute(sql, (name, when, when, key, address)).lastrowid or 0)  # type: ignore[union-attr]
            _journal(c, when, "register", name, f"key {key} from {address}")

        self._transaction(work)

    def banned(self) -> dict[str, str]:
        """The banned bots: name -> reason."""
        return {name: reason for name, reason in self._read("SELECT name, banned FROM bots WHERE banned IS NOT NULL")}

    def ban(self, name: str, reason: str) -> bool:
        """Bans bot ``name`` (journalled); False when there is no such bot."""
        return self._moderate("ban", name, reason, "UPDATE bots SET banned = ? WHERE name = ?", (reason, name))

    def unban(self, name: str) -> bool:
        """Lifts the ban of bot ``name`` (journalled); False when there is no such bot."""
        return self._moderate("unban", name, "", "UPDATE bots SET banned = NULL WHERE name = ?", (name,))

    def retire(self, name: str, number: int) -> bool:
        """Takes version ``number`` of bot ``name`` off the board (its games stay); False when there is none."""
        sql = "UPDATE versions SET retired = ? WHERE number = ? AND bot = (SELECT id FROM bots WHERE name = ?)"
        return self._moderate("retire", f"{name}#{number}", "", sql, (OPERATOR, number, name))

    def _moderate(self, action: str, name: str, detail: str, sql: str, args: tuple[Any, ...]) -> bool:
        when = now()

        def work(c: sqlite3.Connection) -> bool:
            if c.execute(sql, args).rowcount == 0:
                return False
            _journal(c, when, action, name, detail)
            return True

        return self._transaction(work)

    def journal(self, since: int = 0) -> list[JournalRow]:
        """The journal's lines after number ``since``, in order."""
        rows = self._read("SELECT id, at, action, name, detail FROM journal WHERE id > ? ORDER BY id", (since,))
        return [JournalRow(*row) for row in rows]

    def last_journal(self) -> int:
        """The number of the journal's last line (0 for none)."""
        return int(self._read("SELECT coalesce(max(id), 0) FROM journal")[0][0])

    # --- games

    def _version(self, c: sqlite3.Connection, bot: int, ident: EngineIdentity | None, when: str) -> int:
        """The id of the bot's version ``ident``, added when new (beyond :data:`VERSIONS_KEPT` on the board, the
        oldest is retired). An engine that never finished its handshake said nothing of itself: its game goes to the
        bot's latest version."""
        assert self._staged is not None
        staged = self._staged
        if ident is None or ident.protocol is None:
            latest = staged.latest.get(bot) or self._latest.get(bot)
            if latest is None:
                row = c.execute("SELECT max(id) FROM versions WHERE bot = ?", (bot,)).fetchone()
                latest = None if row[0] is None else int(row[0])
            if latest is not None:
                staged.latest[bot] = latest
                return latest
        key = (bot, (ident.id_name if ident else None) or "", (ident.author if ident else None) or "")
        known = staged.versions.get(key) or self._versions.get(key)
        if known is None:
            row = c.execute("SELECT id FROM versions WHERE bot = ? AND id_name = ? AND author = ?", key).fetchone()
            if row is not None:
                known = int(row[0])
        if known is None:
            sql = (
                "INSERT INTO versions (bot, number, id_name, author, first_seen)"
                " VALUES (?, (SELECT count(*) + 1 FROM versions WHERE bot = ?), ?, ?, ?)"
            )
            known = int(c.execute(sql, (bot, bot, key[1], key[2], when)).lastrowid or 0)
            self._keep_versions(c, bot, known)
        elif staged.latest.get(bot, self._latest.get(bot)) != known and self._unretire(c, known):
            self._keep_versions(c, bot, known)
        staged.versions[key] = known
        staged.latest[bot] = known
        return known

    @staticmethod
    def _unretire(c: sqlite3.Connection, version: int) -> bool:
        """Back to a version retired for being old: it is on the board again (True), and the cap applies anew."""
        sql = "UPDATE versions SET retired = NULL WHERE id = ? AND retired = ?"
        return bool(c.execute(sql, (version, AUTO)).rowcount)

    @staticmethod
    def _keep_versions(c: sqlite3.Connection, bot: int, keep: int) -> None:
        """Retires the bot's oldest versions on the board beyond :data:`VERSIONS_KEPT` (never ``keep``)."""
        board = [
            int(r[0])
            for r in c.execute("SELECT id FROM versions WHERE bot = ? AND retired IS NULL ORDER BY number", (bot,))
        ]
        extra = len(board) - VERSIONS_KEPT
        for version in [v for v in board if v != keep][: max(0, extra)]:
            c.execute("UPDATE versions SET retired = ? WHERE id = ?", (AUTO, version))

    def add_game(self, record: GameRecord, pair: int) -> int:
        """Counts a finished game (one transaction, on disk when this returns); returns its number."""
        return self.add_games([(record, pair)])[0]

    def add_games(self, games: Sequence[tuple[GameRecord, int]]) -> list[int]:
        """Counts finished games (record, pair) in one transaction, on disk when this returns; their numbers."""
        when = now()

        def work(c: sqlite3.Connection) -> list[int]:
            numbers = []
            for record, pair in games:
                first, second = self._bot_id(c, record.first, when), self._bot_id(c, record.second, when)
                idents = [*list(record.engines), None, None]
                fv, sv = self._version(c, first, idents[0], when), self._version(c, second, idents[1], when)
                fields = (pair, first, second, fv, sv, *_game_fields(record, when))
                number = c.execute(
                    f"INSERT INTO games ({GAME_FIELDS}, checksum) VALUES ({', '.join('?' * 18)})",
                    (*fields, game_checksum(fields)),
                ).lastrowid
                numbers.append(int(number or 0))
                self._tally(c, fv, sv, record.result.value, record.termination.value)
                outcome = _OUTCOMES.get(record.result.value)
                if outcome is not None:
                    self._total(c, fv, record.termination.value, outcome[0])
                    self._total(c, sv, record.termination.value, outcome[1])
                c.executemany(
                    "INSERT INTO meetings (version, opponent, games) VALUES (?, ?, 1)"
                    " ON CONFLICT (version, opponent) DO UPDATE SET games = games + 1",
                    ((fv, second), (sv, first)),
                )
                c.execute("UPDATE bots SET last_seen = ? WHERE id IN (?, ?)", (when, first, second))
            return numbers

        return self._transaction(work)

    def _tally(self, c: sqlite3.Connection, fv: int, sv: int, result: str, termination: str) -> None:
        """One more game in its tally (a tally whose checksum fails is counted again from its games first)."""
        key = (fv, sv, result, termination)
        row = c.execute(
            "SELECT count, checksum FROM tallies WHERE first_version = ? AND second_version = ? AND result = ?"
            " AND termination = ?",
            key,
        ).fetchone()
        if row is None:
            count = 1
        elif row[1] == tally_checksum(*key, row[0]):
            count = int(row[0]) + 1
        else:
            count = _recount(c, key)  # the game just inserted included
            log.warning("ladder: a tally failed its checksum and was counted again from its %d games", count)
        c.execute(
            "INSERT OR REPLACE INTO tallies (first_version, second_version, result, termination, count, checksum)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (*key, count, tally_checksum(*key, count)),
        )

    def _total(self, c: sqlite3.Connection, version: int, termination: str, outcome: int) -> None:
        """One more win (0), draw (1) or loss (2) in the version's totals (counted again from its tallies, which
        already hold this game, when the row's checksum fails)."""
        row = c.execute(
            "SELECT wins, draws, losses, checksum FROM totals WHERE version = ? AND termination = ?",
            (version, termination),
        ).fetchone()
        if row is None:
            counts = [0, 0, 0]
            counts[outcome] += 1
        elif row[3] == total_checksum(version, termination, *row[:3]):
            counts = list(row[:3])
            counts[outcome] += 1
        else:
            rows = c.execute(
                "SELECT first_version, second_version, result, termination, count, checksum FROM tallies"
                " WHERE (first_version = ? OR second_version = ?) AND termination = ?",
                (version, version, termination),
            ).fetchall()
            counts = totals_of(r[:5] for r in rows if r[5] == tally_checksum(*r[:5])).get(
                (version, termination), [0, 0, 0]
            )
            log.warning("ladder: a version's totals failed their checksum and were counted again from its tallies")
        c.execute(
            "INSERT OR REPLACE INTO totals (version, termination, wins, draws, losses, checksum)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (version, termination, *counts, total_checksum(version, termination, *counts)),
        )

    def add_abandoned(self, record: GameRecord, pair: int, reason: str) -> None:
        """Keeps a game abandoned in flight (not counted)."""
        when = now()
        sql = "INSERT INTO abandoned (pair, first, second, started, reason, record) VALUES (?, ?, ?, ?, ?, ?)"

        def work(c: sqlite3.Connection) -> None:
            first, second = self._bot_id(c, record.first, when), self._bot_id(c, record.second, when)
            c.execute(sql, (pair, first, second, record.started or when, reason, json.dumps(record.to_dict())))

        self._transaction(work)

    def add_dodge(self, bot: str, opponent: str, pair: int, game: int | None) -> None:
        """Notes that ``bot`` was gone before the second game of its pair with ``opponent``: ``game`` is the number of
        the game it was charged with (lost by disconnect), or None when it was let go."""
        when = now()
        sql = "INSERT INTO dodges (bot, opponent, pair, at, charged, game) VALUES (?, ?, ?, ?, ?, ?)"

        def work(c: sqlite3.Connection) -> None:
            ids = (self._bot_id(c, bot, when), self._bot_id(c, opponent, when))
            c.execute(sql, (*ids, pair, when, int(game is not None), game))

        self._transaction(work)

    def recent_leaves(self, bot: str, since: str) -> int:
        """Mid-pair leaves of ``bot`` let go (not charged) since UTC time ``since``."""
        rows = self._read(
            "SELECT count(*) FROM dodges WHERE charged = 0 AND at >= ? AND bot = (SELECT id FROM bots WHERE name = ?)",
            (since, bot),
        )
        return int(rows[0][0])

    def count(self) -> int:
        """Games counted."""
        return int(self._read("SELECT count(*) FROM games")[0][0])

    def last_game(self) -> int:
        """The number of the last game counted (0 for none)."""
        return int(self._read("SELECT coalesce(max(id), 0) FROM games")[0][0])

    def last_pair(self) -> int:
        """The highest pair number seen, counted or abandoned (0 for none)."""
        rows = self._read(
            "SELECT max(coalesce((SELECT max(pair) FROM games), 0), coalesce((SELECT max(pair) FROM abandoned), 0))"
        )
        return int(rows[0][0])

    def met(self, bot: str) -> dict[str, int]:
        """Games counted between bot ``bot`` and each other bot (both colours, any version)."""
        return {
            name: int(n)
            for name, n in self._read(
                "SELECT ob.name, sum(m.games) FROM meetings m JOIN bots ob ON ob.id = m.opponent"
                " WHERE m.version IN (SELECT v.id FROM versions v JOIN bots b ON b.id = v.bot WHERE b.name = ?)"
                " GROUP BY m.opponent",
                (bot,),
            )
        }

    def tallies(self, bot: str | None = None) -> tuple[list[TallyRow], list[str]]:
        """Every tally (of ``bot``, when given) whose checksum holds, and a description of each one that fails (left
        out)."""
        names = dict(self._read("SELECT id, name FROM bots"))
        versions = {v: (names[b], n) for v, b, n in self._read("SELECT id, bot, number FROM versions")}
        rows: list[TallyRow] = []
        damaged: list[str] = []
        sql = "SELECT first_version, second_version, result, termination, count, checksum FROM tallies"
        args: tuple[Any, ...] = ()
        if bot is not None:
            mine = "(SELECT v.id FROM versions v JOIN bots b ON b.id = v.bot WHERE b.name = ?)"
            sql += f" WHERE first_version IN {mine} OR second_version IN {mine}"
            args = (bot, bot)
        results = {r.value: r for r in Result}
        terminations = {t.value: t for t in Termination}
        for fv, sv, result, termination, count, checksum in self._read(sql, args):
            first, second = versions.get(fv), versions.get(sv)
            if checksum != tally_checksum(fv, sv, result, termination, count) or first is None or second is None:
                damaged.append(f"the tally of versions {fv} v {sv}, {result} by {termination}")
                continue
            if result not in results or termination not in terminations:
                damaged.append(f"the tally of versions {fv} v {sv}: {result!r} by {termination!r} is no result")
                continue
            rows.append(
                TallyRow(first[0], second[0], first[1], second[1], results[result], terminations[termination], count)
            )
        return rows, damaged

    def totals(self) -> tuple[list[TotalRow], list[str]]:
        """Every version's totals whose checksum holds, and a description of each one that fails (left out)."""
        names = dict(self._read("SELECT id, name FROM bots"))
        versions = {v: (names[b], n) for v, b, n in self._read("SELECT id, bot, number FROM versions")}
        terminations = {t.value: t for t in Termination}
        rows: list[TotalRow] = []
        damaged: list[str] = []
        for version, termination, wins, draws, losses, checksum in self._read(
            "SELECT version, termination, wins, draws, losses, checksum FROM totals"
        ):
            owner = versions.get(version)
            ok = checksum == total_checksum(version, termination, wins, draws, losses)
            if not ok or owner is None or termination not in terminations:
                damaged.append(f"the totals of version {version} by {termination}")
                continue
            rows.append(TotalRow(owner[0], owner[1], terminations[termination], wins, draws, losses))
        return rows, damaged

    def opponents(self) -> dict[tuple[str, int], int]:
        """Different bots each player has met: (bot, version number; 0 for its retired versions together) -> count."""
        return {
            (name, int(number)): int(n)
            for name, number, n in self._read(
                "SELECT b.name, CASE WHEN v.retired IS NULL THEN v.number ELSE 0 END AS player,"
                " count(DISTINCT m.opponent) FROM meetings m JOIN versions v ON v.id = m.version"
                " JOIN bots b ON b.id = v.bot GROUP BY v.bot, player"
            )
        }

    def dodges(self) -> dict[str, tuple[int, int]]:
        """Per bot: (dodges charged, mid-pair leaves let go)."""
        out: dict[str, list[int]] = {}
        for name, charged, n in self._read(
            "SELECT b.name, d.charged, count(*) FROM dodges d JOIN bots b ON b.id = d.bot GROUP BY b.name, d.charged"
        ):
            out.setdefault(name, [0, 0])[0 if charged else 1] += int(n)
        return {name: (v[0], v[1]) for name, v in out.items()}

    def state(self, *, tallies: bool = True) -> LadderState:
        """Everything the standings need, in one snapshot (the tallies, what a fit reads, only when asked)."""
        with self.snapshot():
            settings = self.settings()
            bots = self.bots()
            totals, damaged = self.totals()
            opponents = self.opponents()
            rows, bad = self.tallies() if tallies else ([], [])
            tally_rows = int(self._read("SELECT count(*) FROM tallies")[0][0])
            counted = self.count()
            last = self.last_game()
            fit = self.stored_fit()
            dodges = self.dodges()
        return LadderState(
            settings,
            tuple(bots),
            tuple(totals),
            opponents,
            tuple(rows),
            tally_rows,
            counted,
            last,
            fit,
            dodges,
            tuple(damaged + bad),
        )

    # --- fits

    def save_fit(
        self,
        through: int,
        games: int,
        anchor: tuple[str, float] | None,
        ratings: Sequence[tuple[str, int, float, float]],
    ) -> None:
        """Stores a fit: ``ratings`` as (bot, version number or 0 for its retired versions, rating, margin); older
        fits are thinned beyond :data:`FITS_KEPT` (every other one goes)."""
        when = now()

        def work(c: sqlite3.Connection) -> None:
            fit = c.execute(
                "INSERT INTO fits (through, games, at, anchor) VALUES (?, ?, ?, ?)",
                (through, games, when, json.dumps(anchor)),
            ).lastrowid
            c.executemany(
                "INSERT INTO ratings (fit, bot, version, rating, margin)"
                " VALUES (?, (SELECT id FROM bots WHERE name = ?), ?, ?, ?)",
                [(fit, bot, number, rating, margin) for bot, number, rating, margin in ratings],
            )
            ids = [int(r[0]) for r in c.execute("SELECT id FROM fits ORDER BY id")]
            if len(ids) > FITS_KEPT:
                c.executemany("DELETE FROM fits WHERE id = ?", [(i,) for i in ids[1:-1:2]])

        self._transaction(work)

    def stored_fit(self) -> StoredFit | None:
        """The last fit stored, or None."""
        rows = self._read("SELECT id, through, games, at, anchor FROM fits ORDER BY id DESC LIMIT 1")
        if not rows:
            return None
        fit, through, games, at, anchor = rows[0]
        ratings = {
            (name, int(version)): (float(rating), float(margin))
            for name, version, rating, margin in self._read(
                "SELECT b.name, r.version, r.rating, r.margin FROM ratings r JOIN bots b ON b.id = r.bot"
                " WHERE r.fit = ?",
                (fit,),
            )
        }
        pinned = json.loads(anchor)
        return StoredFit(
            int(through), int(games), at, None if pinned is None else (pinned[0], float(pinned[1])), ratings
        )

    def history(self, bot: str) -> list[tuple[int, int, float, float]]:
        """The stored fits' ratings of ``bot``, oldest first: (games fitted, version number, rating, margin)."""
        return [
            (int(g), int(v), float(r), float(m))
            for g, v, r, m in self._read(
                "SELECT f.games, r.version, r.rating, r.margin FROM ratings r JOIN fits f ON f.id = r.fit"
                " WHERE r.bot = (SELECT id FROM bots WHERE name = ?) ORDER BY f.id, r.version",
                (bot,),
            )
        ]

    # --- games as records

    def game(self, game_id: int) -> GameRecord | None:
        """Counted game number ``game_id``, or None (also when its checksum fails: it is not shown as it now reads)."""
        rows = self._read(f"SELECT {_GAME_COLUMNS} FROM {_GAME_JOIN} WHERE g.id = ?", (game_id,))
        return _record(rows[0]) if rows and _verified(rows[0]) else None

    def recent(self, limit: int, bot: str | None = None) -> list[GameRecord]:
        """The last ``limit`` counted games (of ``bot``, when given), newest first; a game whose checksum fails is
        left out."""
        where, args = ("1", ()) if bot is None else self._of_bot(bot, 0, limit, newest=True)
        rows = self._read(
            f"SELECT {_GAME_COLUMNS} FROM {_GAME_JOIN} WHERE {where} ORDER BY g.id DESC LIMIT ?", (*args, limit)
        )
        return [_record(r) for r in rows if _verified(r)]

    def games(self, batch: int = 1000) -> Iterator[tuple[GameRecord, int, int, bool]]:
        """Every counted game in order: its record, the version numbers of first and second, and whether its
        checksum holds (a game that fails it is not to be trusted as it now reads). Call inside :meth:`snapshot`
        for a consistent whole."""
        last = 0
        while page := self.games_after(last, batch):
            yield from page
            last = page[-1][0].game_id

    def games_after(self, since: int, limit: int, bot: str | None = None) -> list[tuple[GameRecord, int, int, bool]]:
        """The first ``limit`` counted games after number ``since`` (of ``bot``, when given), in order, as
        :meth:`games` gives them (a game whose checksum fails: who played it, and False)."""
        where, args = ("g.id > ?", (since,)) if bot is None else self._of_bot(bot, since, limit, newest=False)
        rows = self._read(
            f"SELECT {_GAME_COLUMNS}, fv.number, sv.number FROM {_GAME_JOIN}"
            " JOIN versions fv ON fv.id = g.first_version JOIN versions sv ON sv.id = g.second_version"
            f" WHERE {where} ORDER BY g.id LIMIT ?",
            (*args, limit),
        )
        out = []
        for row in rows:
            ok = _verified(row[:-2])
            out.append((_record(row[:-2]) if ok else _damaged(row), int(row[-2]), int(row[-1]), ok))
        return out

    def _read_bot_id(self, name: str) -> int:
        """Bot ``name``'s id (-1 for none), read by name, not from this connection's cache of ids: another
        connection (the ladder's) may have added it."""
        found = self._read("SELECT id FROM bots WHERE name = ?", (name,))
        return int(found[0][0]) if found else -1

    def _of_bot(self, bot: str, since: int, limit: int, *, newest: bool) -> tuple[str, tuple[Any, ...]]:
        """The condition (and its arguments) for the first (``newest``: last) ``limit`` games of ``bot`` after number
        ``since``: two index ranges, the bot as first and as second, rather than every game of either side read and
        sorted (0.3 ms rather than 24 ms for a bot of 2,000 games in a million, benchmarks/ladder_pages.py)."""
        part = f"SELECT id FROM games WHERE {{}} = ? AND id > ? ORDER BY id {'DESC' if newest else ''} LIMIT ?"
        bot_id = self._read_bot_id(bot)
        union = f"SELECT * FROM ({part.format('first')}) UNION SELECT * FROM ({part.format('second')})"
        return f"g.id IN ({union})", (bot_id, since, limit, bot_id, since, limit)

    # --- checks and backups

    def check(self, *, repair: bool = False) -> CheckReport:
        """The full check: ``PRAGMA integrity_check``, every game's checksum, every tally against the games that
        verify. ``repair`` then counts the tallies again from those games (the ladder must not be running)."""
        integrity = tuple(str(r[0]) for r in self._read("PRAGMA integrity_check(20)"))
        bad_games: list[int] = []
        counts: dict[tuple[int, int, str, str], int] = {}
        games = 0
        with self.snapshot():
            last = 0
            while True:
                rows = self._read(
                    f"SELECT id, {GAME_FIELDS}, checksum FROM games WHERE id > ? ORDER BY id LIMIT 5000", (last,)
                )
                if not rows:
                    break
                for row in rows:
                    games += 1
                    if game_checksum(row[1:-1]) != row[-1]:
                        bad_games.append(int(row[0]))
                        continue
                    key = (int(row[4]), int(row[5]), str(row[6]), str(row[7]))
                    counts[key] = counts.get(key, 0) + 1
                last = rows[-1][0]
            stored = {
                (int(fv), int(sv), str(r), str(t)): (int(n), str(s))
                for fv, sv, r, t, n, s in self._read(
                    "SELECT first_version, second_version, result, termination, count, checksum FROM tallies"
                )
            }
            totals = {
                (int(v), str(t)): (int(w), int(d), int(lo), str(s))
                for v, t, w, d, lo, s in self._read(
                    "SELECT version, termination, wins, draws, losses, checksum FROM totals"
                )
            }
            meetings = int(
                self._read(
                    f"SELECT count(*) FROM (SELECT * FROM ({MEETINGS_OF_TALLIES}) EXCEPT SELECT version, opponent,"
                    f" games FROM meetings UNION ALL SELECT * FROM (SELECT version, opponent, games FROM meetings"
                    f" EXCEPT SELECT * FROM ({MEETINGS_OF_TALLIES})))"
                )[0][0]
            )
        expected = {key: tuple(n) for key, n in totals_of((*k, n) for k, n in counts.items()).items()}
        bad_tallies = (
            [f"{meetings} meetings (games of a version against a bot) differ from the tallies"] if meetings else []
        )
        for key2 in sorted(set(expected) | set(totals)):
            *found, checksum2 = totals.get(key2, (0, 0, 0, ""))
            if key2 in totals and checksum2 != total_checksum(*key2, *found):
                bad_tallies.append(f"totals of version {key2[0]} by {key2[1]}: their checksum fails")
            elif tuple(found) != expected.get(key2, (0, 0, 0)):
                bad_tallies.append(
                    f"totals of version {key2[0]} by {key2[1]}: {tuple(found)} stored, {expected.get(key2)} from games"
                )
        for key in sorted(set(counts) | set(stored)):
            n, checksum = stored.get(key, (0, ""))
            if key in stored and checksum != tally_checksum(*key, n):
                bad_tallies.append(f"tally {key[0]} v {key[1]} {key[2]} {key[3]}: its checksum fails")
            elif n != counts.get(key, 0):
                bad_tallies.append(
                    f"tally {key[0]} v {key[1]} {key[2]} {key[3]}: {n} stored, {counts.get(key, 0)} games"
                )
        if repair and bad_tallies:

            def work(c: sqlite3.Connection) -> None:
                c.execute("DELETE FROM tallies")
                c.executemany(
                    "INSERT INTO tallies (first_version, second_version, result, termination, count, checksum)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [(*key, n, tally_checksum(*key, n)) for key, n in counts.items()],
                )
                c.execute("DELETE FROM meetings")
                c.execute(MEETINGS_FROM_TALLIES)
                c.execute("DELETE FROM totals")
                c.executemany(
                    "INSERT INTO totals (version, termination, wins, draws, losses, checksum)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [(*key, *n, total_checksum(*key, *n)) for key, n in expected.items()],
                )

            self._transaction(work)
        return CheckReport(integrity, games, tuple(bad_games), tuple(bad_tallies))

    def backup(self, target: Path) -> None:
        """Copies the database to ``target`` with SQLite's online backup (consistent while the ladder writes):
        written beside it first, then renamed into place. :class:`LadderDBError` names what failed."""
        partial = target.with_name(f".{target.name}.partial")
        try:
            copy = sqlite3.connect(partial)
        except sqlite3.Error as e:
            raise LadderDBError(f"{target}: cannot write the backup there: {e}") from None
        try:
            self._db.backup(copy)
            copy.close()
            os.replace(partial, target)
        except (sqlite3.Error, OSError) as e:
            copy.close()
            with contextlib.suppress(OSError):
                partial.unlink()
            if isinstance(e, OSError):
                why = e.strerror or str(e)
            else:
                why = "the disk is full" if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL else str(e)
            raise LadderDBError(f"{target}: the backup failed: {why}") from None


_OUTCOMES: Final = {"1-0": (0, 2), "0-1": (2, 0), "1/2-1/2": (1, 1)}  # (first's, second's): win 0, draw 1, loss 2
_CHECKED: Final = ", ".join("g." + f for f in GAME_FIELDS.split(", "))  # the columns a checksum covers
_GAME_COLUMNS: Final = (
    "g.id, g.pair, fb.name, sb.name, g.result, g.termination, g.detail, g.started, g.variant, g.time_control,"
    f" g.start, g.opening, g.turns, g.exit_info, g.engines, g.checksum, {_CHECKED}"
)
_GAME_JOIN: Final = "games g JOIN bots fb ON fb.id = g.first JOIN bots sb ON sb.id = g.second"


def _journal(c: sqlite3.Connection, when: str, action: str, name: str, detail: str) -> None:
    c.execute("INSERT INTO journal (at, action, name, detail) VALUES (?, ?, ?, ?)", (when, action, name, detail))


def _recount(c: sqlite3.Connection, key: tuple[int, int, str, str]) -> int:
    """The games of one tally whose checksums hold."""
    rows = c.execute(
        f"SELECT {GAME_FIELDS}, checksum FROM games WHERE first_version = ? AND second_version = ? AND result = ?"
        " AND termination = ?",
        key,
    ).fetchall()
    return sum(1 for row in rows if game_checksum(row[:-1]) == row[-1])


def _migrate(db: sqlite3.Connection, path: Path, version: int, progress: Callable[[str], None]) -> None:
    """Backs the database up next to itself (``ladder.db.vN.bak``), then runs each step to the current schema, each
    in one transaction with its version bump."""
    backup = path.with_name(f"{path.name}.v{version}.bak")
    n = 1
    while backup.exists():  # an earlier attempt's (stopped midway), or an older backup: both kept
        n += 1
        backup = path.with_name(f"{path.name}.v{version}-{n}.bak")
    progress(f"{path}: schema {version} of an earlier quarto-arena: a copy goes to {backup} first")
    try:
        copy = sqlite3.connect(backup)
        try:
            db.backup(copy)
        finally:
            copy.close()
    except (sqlite3.Error, OSError) as e:
        with contextlib.suppress(OSError):
            backup.unlink()
        raise LadderDBError(f"{backup}: cannot back the database up before migrating it: {e}") from None
    while version < SCHEMA_VERSION:
        db.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[version](db, progress)
            version += 1
            db.execute(f"PRAGMA user_version = {version}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        progress(f"{path}: migrated to schema {version}")


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


def _verified(row: tuple[Any, ...]) -> bool:
    """True when a row read with :data:`_GAME_COLUMNS` holds its checksum."""
    return bool(game_checksum(row[16:33]) == row[15])


def _damaged(row: tuple[Any, ...]) -> GameRecord:
    """What is shown of a game whose checksum fails: who played it, and nothing it now claims."""
    return GameRecord(
        first=row[2],
        second=row[3],
        result=Result.UNFINISHED,
        termination=Termination.ABORTED,
        detail="changed since it was counted (its checksum fails): not counted",
        game_id=row[0],
        round=row[1],
    )


def _record(row: tuple[Any, ...]) -> GameRecord:
    (game_id, pair, first, second, result, termination, detail, started, variant, tc, start, opening, turns,
     exit_info, engines) = row[:15]  # fmt: skip
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
