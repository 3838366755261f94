"""The ladder database's schema, its version and its migrations: the DDL half of :mod:`.db` (which owns the queries).

``PRAGMA user_version`` is the schema's version. A database of an earlier version is migrated in place when a ladder
starts on it (``ladder run``), after a copy of it is written next to it (``ladder.db.vN.bak``, SQLite's online
backup); the other commands read the current schema only and say which command migrates. One function per step
(:data:`MIGRATIONS`), each run in one transaction with the version bump, so a migration stopped at any moment leaves
the old database or the new one, never half of each. A migration never drops a game. The history:

- 1 (the ladder's first release): settings, bots, versions, games, abandoned. Three variants were released with the
  same version number, differing only in their indexes: ``games_first`` and ``games_second``; plus ``games_scores``;
  plus ``games_tally`` instead (a database opened by each release in turn has both). ``tests/data/ladder-schemas``
  holds each as it was released.
- 2: every game row carries the checksum of its record; the tallies of counted games are kept as games are counted
  (each row with a checksum), so that nothing re-reads every game, and each version's totals (wins, draws and
  losses by termination), so that the standings read a row or two per version, and the games of each version
  against each bot (the matchmaking's and the provisional rule's); bots registered by themselves
  (``--open``) with their key and address; bans; retired versions; dodges; the moderation journal; the ratings of
  the last fits.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any, Final

__all__ = [
    "MEETINGS_FROM_TALLIES",
    "MEETINGS_OF_TALLIES",
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "game_checksum",
    "tally_checksum",
    "total_checksum",
    "totals_of",
]

SCHEMA_VERSION: Final = 2
"""The version this quarto-arena writes (``PRAGMA user_version``)."""

SCHEMA: Final = """
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE bots (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    house INTEGER NOT NULL DEFAULT 0,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    origin TEXT NOT NULL DEFAULT 'keys',
    key TEXT,
    address TEXT NOT NULL DEFAULT '',
    banned TEXT
);
CREATE UNIQUE INDEX bots_key ON bots(key);
CREATE TABLE versions (
    id INTEGER PRIMARY KEY,
    bot INTEGER NOT NULL REFERENCES bots(id),
    number INTEGER NOT NULL,
    id_name TEXT NOT NULL,
    author TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    retired TEXT,
    UNIQUE (bot, id_name, author)
);
CREATE TABLE games (
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
    engines TEXT NOT NULL,
    checksum TEXT NOT NULL DEFAULT ''
);
CREATE INDEX games_first ON games(first);
CREATE INDEX games_second ON games(second);
CREATE INDEX games_pair ON games(pair);
CREATE TABLE abandoned (
    id INTEGER PRIMARY KEY,
    pair INTEGER NOT NULL,
    first INTEGER NOT NULL REFERENCES bots(id),
    second INTEGER NOT NULL REFERENCES bots(id),
    started TEXT NOT NULL,
    reason TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE tallies (
    first_version INTEGER NOT NULL REFERENCES versions(id),
    second_version INTEGER NOT NULL REFERENCES versions(id),
    result TEXT NOT NULL,
    termination TEXT NOT NULL,
    count INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    PRIMARY KEY (first_version, second_version, result, termination)
) WITHOUT ROWID;
CREATE INDEX tallies_second ON tallies(second_version);
CREATE TABLE totals (
    version INTEGER NOT NULL REFERENCES versions(id),
    termination TEXT NOT NULL,
    wins INTEGER NOT NULL,
    draws INTEGER NOT NULL,
    losses INTEGER NOT NULL,
    checksum TEXT NOT NULL,
    PRIMARY KEY (version, termination)
) WITHOUT ROWID;
CREATE TABLE meetings (
    version INTEGER NOT NULL REFERENCES versions(id),
    opponent INTEGER NOT NULL REFERENCES bots(id),
    games INTEGER NOT NULL,
    PRIMARY KEY (version, opponent)
) WITHOUT ROWID;
CREATE TABLE dodges (
    id INTEGER PRIMARY KEY,
    bot INTEGER NOT NULL REFERENCES bots(id),
    opponent INTEGER NOT NULL REFERENCES bots(id),
    pair INTEGER NOT NULL,
    at TEXT NOT NULL,
    charged INTEGER NOT NULL,
    game INTEGER REFERENCES games(id)
);
CREATE INDEX dodges_bot ON dodges(bot);
CREATE TABLE journal (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    name TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE TABLE fits (
    id INTEGER PRIMARY KEY,
    through INTEGER NOT NULL,
    games INTEGER NOT NULL,
    at TEXT NOT NULL,
    anchor TEXT NOT NULL
);
CREATE TABLE ratings (
    fit INTEGER NOT NULL REFERENCES fits(id) ON DELETE CASCADE,
    bot INTEGER NOT NULL REFERENCES bots(id),
    version INTEGER NOT NULL,
    rating REAL NOT NULL,
    margin REAL NOT NULL,
    PRIMARY KEY (fit, bot, version)
) WITHOUT ROWID;
"""
"""The current schema, as a new ladder gets it (a migrated one ends the same: tests/test_ladder_db.py compares)."""

_SEPARATOR: Final = "\x1f"  # ASCII unit separator: in none of the fields' texts (JSON escapes it; names exclude it)


def game_checksum(fields: Iterable[Any]) -> str:
    """The checksum of a game row: BLAKE2b (128 bits, hex) of its columns from ``pair`` to ``engines`` in order, the
    bots and versions by their ids. It tells a row changed since it was counted (a flipped byte, an edit by hand that
    did not recompute it), not a forgery: whoever can write the file can recompute it."""
    text = _SEPARATOR.join(str(v) for v in fields)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def tally_checksum(first_version: int, second_version: int, result: str, termination: str, count: int) -> str:
    """The checksum of a tally row (BLAKE2b, 64 bits, hex)."""
    return _short(first_version, second_version, result, termination, count)


def total_checksum(version: int, termination: str, wins: int, draws: int, losses: int) -> str:
    """The checksum of a version's totals row (BLAKE2b, 64 bits, hex)."""
    return _short(version, termination, wins, draws, losses)


def _short(*fields: object) -> str:
    return hashlib.blake2b(_SEPARATOR.join(map(str, fields)).encode(), digest_size=8).hexdigest()


def totals_of(tallies: Iterable[tuple[int, int, str, str, int]]) -> dict[tuple[int, str], list[int]]:
    """The totals rows of these tallies (first version, second version, result, termination, count): (version,
    termination) -> [wins, draws, losses]."""
    out: dict[tuple[int, str], list[int]] = {}
    for fv, sv, result, termination, count in tallies:
        first = out.setdefault((fv, termination), [0, 0, 0])
        second = out.setdefault((sv, termination), [0, 0, 0])
        if result == "1/2-1/2":
            first[1] += count
            second[1] += count
        elif result in ("1-0", "0-1"):
            winner, loser = (first, second) if result == "1-0" else (second, first)
            winner[0] += count
            loser[2] += count
    return out


GAME_FIELDS: Final = (
    "pair, first, second, first_version, second_version, result, termination, detail, started, finished, variant,"
    " time_control, start, opening, turns, exit_info, engines"
)
"""The columns a game's checksum covers, in order."""


def _to_2(db: sqlite3.Connection, progress: Callable[[str], None]) -> None:
    """1 -> 2: the new columns and tables; every game's checksum; the tallies counted from the games."""
    for statement in (
        "ALTER TABLE bots ADD COLUMN origin TEXT NOT NULL DEFAULT 'keys'",
        "ALTER TABLE bots ADD COLUMN key TEXT",
        "ALTER TABLE bots ADD COLUMN address TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE bots ADD COLUMN banned TEXT",
        "UPDATE bots SET origin = 'house' WHERE house = 1",
        "CREATE UNIQUE INDEX bots_key ON bots(key)",
        "ALTER TABLE versions ADD COLUMN retired TEXT",
        "ALTER TABLE games ADD COLUMN checksum TEXT NOT NULL DEFAULT ''",
        # The first release's indexes for the tallies: the tallies table replaces them.
        "DROP INDEX IF EXISTS games_scores",
        "DROP INDEX IF EXISTS games_tally",
        "CREATE INDEX games_pair ON games(pair)",
    ):
        db.execute(statement)
    for table in ("tallies", "totals", "meetings", "dodges", "journal", "fits", "ratings"):
        db.execute(_create(table))
    db.execute("CREATE INDEX tallies_second ON tallies(second_version)")
    db.execute("CREATE INDEX dodges_bot ON dodges(bot)")
    total = int(db.execute("SELECT count(*) FROM games").fetchone()[0])
    done = 0
    last = 0
    while True:
        rows = db.execute(
            f"SELECT id, {GAME_FIELDS} FROM games WHERE id > ? ORDER BY id LIMIT 10000", (last,)
        ).fetchall()
        if not rows:
            break
        db.executemany("UPDATE games SET checksum = ? WHERE id = ?", [(game_checksum(r[1:]), r[0]) for r in rows])
        last = rows[-1][0]
        done += len(rows)
        progress(f"checksums of {done:,} of {total:,} games")
    counts = db.execute(
        "SELECT first_version, second_version, result, termination, count(*) FROM games"
        " GROUP BY first_version, second_version, result, termination"
    ).fetchall()
    db.executemany(
        "INSERT INTO tallies (first_version, second_version, result, termination, count, checksum)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(*row, tally_checksum(*row)) for row in counts],
    )
    db.executemany(
        "INSERT INTO totals (version, termination, wins, draws, losses, checksum) VALUES (?, ?, ?, ?, ?, ?)",
        [(*key, *n, total_checksum(*key, *n)) for key, n in totals_of(counts).items()],
    )
    db.execute(MEETINGS_FROM_TALLIES)


MEETINGS_OF_TALLIES: Final = """
SELECT version, opponent, sum(n) FROM (
    SELECT t.first_version AS version, sv.bot AS opponent, t.count AS n FROM tallies t
        JOIN versions sv ON sv.id = t.second_version
    UNION ALL
    SELECT t.second_version, fv.bot, t.count FROM tallies t JOIN versions fv ON fv.id = t.first_version
) GROUP BY version, opponent
"""
"""The meetings as the tallies count them (version, opponent bot, games)."""
MEETINGS_FROM_TALLIES: Final = f"INSERT INTO meetings (version, opponent, games) {MEETINGS_OF_TALLIES}"
"""The meetings counted again from the tallies (a migration, a repair)."""


def _create(table: str) -> str:
    """The CREATE TABLE statement of ``table`` in :data:`SCHEMA`."""
    start = SCHEMA.index(f"CREATE TABLE {table} (")
    return SCHEMA[start : SCHEMA.index(";", start)]


MIGRATIONS: Final[dict[int, Callable[[sqlite3.Connection, Callable[[str], None]], None]]] = {1: _to_2}
"""The step from each earlier version to the next, keyed by the version it starts from."""
