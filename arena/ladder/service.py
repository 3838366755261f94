"""The standing arena: bots connect in whenever they like (a public key in the keys directory, or with ``--open`` any
key, which registers its name), pairs are made among whoever is online (:mod:`.matchmaking`, within the slots each
has earned: :mod:`.rules`), and every game is counted in ``DIR/ladder.db`` (:mod:`.db`).

The server is :class:`~quarto_arena.arena.server.Server` as runs use it (CurveZMQ, heartbeats, limits per
connection); the ladder changes who it lets in (:meth:`Server.allow`, :meth:`Server.bar`, :attr:`Server.register`)
as the keys directory, the registrations and the bans change (the keys directory looked at every :data:`KEYS_POLL`
seconds, the database's journal of bans every :data:`JOURNAL_POLL`). Games are played by
:class:`~quarto_arena.arena.run.LocalPlayer` over one :class:`~quarto_arena.arena.run.EnginePool` (the house engines'
processes here, the bots' sessions leased from the server), so a game on the ladder is refereed exactly as in a
tournament. The ratings are refitted in a process of its own (:class:`.refit.FitWorker`) whenever games were counted, at
most a tenth of the time, and each fit is stored in the database.

What happens when:

- a bot connects: it may be paired at once (its games-while-online count starts at the lowest of those online, so
  it neither waits nor jumps the queue), on one slot at first (slots are earned: :mod:`.rules`).
- a bot's session began and it then fails (no handshake, no answer, disconnects, even just before a deadline): it
  loses that game, counted; a stall benches it (:mod:`.rules`).
- a bot is gone before the second game of its pair: see :func:`.rules.charge_leave` (the dodging rule; every such
  leave is recorded in ``dodges``).
- its key is removed, or it is banned (``ladder ban``): its pairs in flight are cancelled first (their games
  abandoned, kept in ``abandoned``, not counted), then the server cuts its connection; a banned bot is refused.
- the ladder is stopped (SIGINT, SIGTERM, SIGHUP), at any moment, even while it opens a large database: every pair in
  flight is cancelled (games abandoned and kept as such), engines are ended, the bots' connections closed, the
  database closed. The same command continues it. A ladder that stops before it started leaves no database it made.
- the ladder is killed: games in flight are lost (never counted), counted ones are on disk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, TypeVar

from quarto_arena.engines.registry import BUILTIN

from ..engine import Deadlines, EngineConfig
from ..errors import ArenaError, ArenaFault
from ..records import GameRecord, Result, Termination, TurnRecord
from ..referee import GameSpec, variant_text
from ..run import EnginePool, Event, GameEnded, GameStarted, LocalPlayer, Notice
from ..schedule import ScheduledGame
from ..server import KeysError, Server, ServerError, ServerKeys, keys_signature, load_keys_directory
from ..settings import GameSettings
from ..stats.rating import MAX_PLAYERS
from ..transport import DEFAULT_STDERR_LIMIT, Transcript, Transport
from .db import DB_NAME, LOCK_NAME, VERSIONS_KEPT, DirectoryLock, LadderDB, LadderDBError, now
from .matchmaking import Pairing, next_pairs, pair_key
from .refit import FitWorker
from .rules import LEAVE_WINDOW, Conduct, Registrations, charge_leave, name_problem, stalled
from .standings import Standings, default_anchor, standings

__all__ = [
    "HOUSE_SLOTS",
    "JOURNAL_POLL",
    "KEYS_POLL",
    "MAX_BOTS",
    "BotsChanged",
    "GameCounted",
    "Ladder",
    "LadderError",
    "LadderSettings",
    "RatingsChanged",
]

log = logging.getLogger(__name__)

KEYS_POLL: Final = 1.0
"""Seconds between two looks at the keys directory: a key added or removed takes effect within this (and the
handshake's time)."""
JOURNAL_POLL: Final = 0.5
"""Seconds between two looks at the database's journal: a ban takes effect within this."""
HOUSE_SLOTS: Final = 2
"""Games at once of each house engine (local processes: each slot is one process)."""
MAX_BOTS: Final = MAX_PLAYERS // (VERSIONS_KEPT + 1)
"""Bots an open ladder registers at most: with :data:`~.db.VERSIONS_KEPT` versions on the board each and one player
for their retired ones, the fit never holds more players than :func:`~quarto_arena.arena.stats.rate` takes."""
_IDLE: Final = 1.0  # s between two looks at who is free when nothing changes
_FIT_SHARE: Final = 0.1  # the most of the time the refits may take
_FIT_EVERY: Final = 1.0  # s between two refits at least
_FIT_RETRY: Final = 5.0  # s before a failed refit is tried again (doubled up to a minute)
_QUIT: Final = 0.25  # s a house engine has to exit on quit when the ladder stops, before it is killed

T = TypeVar("T")

_LEASED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("_LEASED", default=None)
"""The bots whose session began in the game being played (a pair's task sets it; the connector adds to it)."""


class LadderError(ArenaError):
    """A ladder that cannot start (a bad setting, keys, an endpoint in use, a database that is not a ladder's)."""

    reason = "ladder"


class _Stopped(Exception):
    """Asked to stop while starting (not an error: the ladder stops before its first game)."""


@dataclass(frozen=True, slots=True)
class LadderSettings:
    """How the ladder plays: given on each ``ladder run`` (the same command continues a ladder)."""

    house: tuple[EngineConfig, ...] = ()
    """Local engines that are always online."""
    endpoint: str | None = None
    """Where bots connect in (None: house engines only)."""
    keys: Path | None = None
    """The keys directory: ``arena.key_secret`` and a ``NAME.key`` per bot (reserved names, with ``open``)."""
    open: bool = False
    """Any key may connect, registering under the name it says (first come, first served)."""
    concurrency: int = 1
    """Games at once (pairs in flight)."""
    game: GameSettings = field(default_factory=GameSettings)
    """Every game's time control, variant, margin and adjudication, and the openings: pair N opens with opening N
    (the runs' type, from the same options)."""
    log_limit: int = DEFAULT_STDERR_LIMIT
    """Bytes of each engine's stderr kept in ``DIR/logs``."""
    house_slots: int = HOUSE_SLOTS
    """Games at once of each house engine."""
    anchor: tuple[str, float] | None = None
    """The ratings' anchor (a bot or a player, and its rating); None: as the ladder was, else the first house engine
    at 0."""

    def describe(self) -> dict[str, Any]:
        """The settings as plain values, for the database's ``settings`` table (for people)."""
        return {
            "house": [e.name for e in self.house],
            "endpoint": self.endpoint,
            "keys": None if self.keys is None else str(self.keys),
            "open": self.open,
            "concurrency": self.concurrency,
            "tc": self.game.time_control.text,
            "variant": self.game.variant.describe(),
            "margin_ms": self.game.margin_ms,
            "adjudicate": self.game.adjudicate,
            "openings": self.game.book.identity(),
        }


@dataclass(frozen=True, slots=True)
class GameCounted:
    """A game committed to the database (its ``game_id`` is its number there)."""

    record: GameRecord


@dataclass(frozen=True, slots=True)
class BotsChanged:
    """Who is online changed (a bot connected or left, a key came or went)."""

    online: dict[str, int]
    """Slots of each bot online now, house engines included."""


@dataclass(frozen=True, slots=True)
class RatingsChanged:
    """A refit is done (and stored)."""

    standings: Standings


LadderEvent = Event | GameCounted | BotsChanged | RatingsChanged


@dataclass(slots=True)
class _Pair:
    number: int
    a: str
    b: str
    task: asyncio.Task[None] | None = None


class Ladder:
    """One ladder in ``directory``: :meth:`run` serves and plays until its ``stop`` event is set."""

    def __init__(
        self,
        directory: Path,
        settings: LadderSettings,
        *,
        on_event: Callable[[LadderEvent], None] | None = None,
        deadlines: Deadlines | None = None,
        transcript: Transcript | None = None,
    ) -> None:
        self.directory = directory
        self.settings = settings
        self.on_event = on_event or (lambda _e: None)
        self.db: LadderDB | None = None
        self.server: Server | None = None
        self.anchor: tuple[str, float] | None = None
        """The ratings' anchor, once the database is open."""
        self.standings: Standings | None = None
        """The last fit's standings (every version, banned and retired ones too), once there is one."""
        # A ladder that stops does not wait on its house engines' exits: a second at most in all (SIGTERM's bar).
        self._deadlines = deadlines or Deadlines(quit=_QUIT)
        self._transcript = transcript
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ladder-db")
        self._pairs: dict[int, _Pair] = {}
        self._next_pair = 1
        self._next_live = 1
        self._games: dict[str, int] = {}
        self._met: dict[tuple[str, str], int] = {}
        self._learned: set[str] = set()
        self._learning: set[asyncio.Task[None]] = set()
        """Database reads and writes the loop does not wait for (a bot's meetings, a registration)."""
        self._online: dict[str, int] = {}
        self._conduct: dict[str, Conduct] = {}
        self._keys_seen: object = None
        self._keys_told: set[str] = set()  # the keys directory's problems told already (each told once)
        self._keys: ServerKeys | None = None
        self._registered: dict[bytes, str] = {}
        self._names: set[str] = set()
        self._banned: dict[str, str] = {}
        self._journal = 0
        self._registrations = Registrations()
        self._wake = asyncio.Event()
        self._house = {e.name for e in settings.house}
        self._player: LocalPlayer | None = None
        self._failure: Exception | None = None
        self._fitter = FitWorker()
        self._counted_at_fit = -1
        self._at_start = 0
        self.ready = asyncio.Event()
        """Set once the database is open and the server listens (the games begin)."""
        self.counted = 0
        """Games counted by this process."""
        self.abandoned = 0
        """Games abandoned by this process."""

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """Runs a database call on the ladder's own thread (SQLite's commit waits for the disk; the loop must not)."""
        return await asyncio.get_running_loop().run_in_executor(self._writer, fn, *args)

    async def _db_or_stop(self, stop: asyncio.Event, fn: Callable[..., T], *args: Any) -> T:
        """A database call of the start, given up at once when ``stop`` is set (the statement is interrupted)."""
        call = asyncio.ensure_future(self._db(fn, *args))
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait([call, stopper], return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not call.done():
            if self.db is not None:
                self.db.interrupt()
            with contextlib.suppress(Exception):
                await call
            raise _Stopped
        return call.result()

    # --- lifetime

    async def run(self, stop: asyncio.Event) -> None:
        """Opens the database, serves, plays until ``stop``; then abandons the games in flight (kept as such), ends
        every engine and connection, and closes the database. Raises :class:`LadderError` before any game; a stop
        before the first game is no error."""
        made = not self.directory.exists()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LadderError(f"{self.directory}: cannot create it: {e.strerror or e}") from None
        lock = DirectoryLock(self.directory)
        try:
            lock.acquire()
        except LadderDBError as e:
            if made:
                shutil.rmtree(self.directory, ignore_errors=True)
            raise LadderError(str(e)) from None
        pool: EnginePool | None = None
        try:
            try:
                pool = await self._start(stop)
            except BaseException:
                await self._unmake(made)
                raise
            try:
                self.ready.set()
                await self._serve(stop)
            finally:
                await asyncio.shield(self._close(pool))
        except _Stopped:
            pass
        finally:
            self._fitter.close()
            self._writer.shutdown(wait=True)
            lock.release()

    async def _start(self, stop: asyncio.Event) -> EnginePool:
        """The database opened (checked, migrated), the server bound: the pool to play with."""
        try:
            (self.directory / "logs").mkdir(exist_ok=True)
        except OSError as e:
            raise LadderError(f"{self.directory}: cannot create its logs: {e.strerror or e}") from None
        path = self.directory / DB_NAME
        try:
            db = self.db = await self._db(LadderDB.connect, path)
            await self._db_or_stop(stop, lambda: db.prepare(migrate=True, check=True, progress=_progress))
            saved = await self._db_or_stop(stop, db.settings)
            self.anchor = self._anchor(saved)
            await self._db(db.save_settings, {**self.settings.describe(), "anchor": self.anchor})
            for name in self._house:
                await self._db(lambda name=name: db.bot(name, house=True))
            for name in self._house:
                self._learn(name, await self._db_or_stop(stop, db.met, name))
            self._next_pair = await self._db_or_stop(stop, db.last_pair) + 1
            self._registered = {key.encode(): name for name, key in (await self._db(db.registered)).items()}
            self._banned = await self._db(db.banned)
            self._journal = await self._db(db.last_journal)
            self._names = {b.name for b in await self._db_or_stop(stop, db.bots)}
            self._at_start = await self._db_or_stop(stop, db.count)
            fit = await self._db_or_stop(stop, db.stored_fit)
            if fit is not None and fit.through == await self._db(db.last_game) and fit.anchor == self.anchor:
                self._counted_at_fit = self._at_start  # the stored fit is current: no refit until games come
            if fit is not None:  # the pages show the stored ratings at once (the refits follow)
                state = await self._db_or_stop(stop, lambda: db.state(tallies=False))
                self.standings = standings(state, self.anchor, by_version=True, everything=True)
        except LadderDBError as e:
            raise LadderError(str(e)) from None
        pool = EnginePool(
            self.settings.house,
            deadlines=self._deadlines,
            log_dir=self.directory / "logs",
            log_limit=self.settings.log_limit,
            transcript=self._transcript,
        )
        try:
            await self._open(pool)
        except BaseException:
            await pool.close()
            raise
        return pool

    def _anchor(self, saved: dict[str, Any]) -> tuple[str, float] | None:
        """The anchor given, else the one the ladder had, else the first house engine at 0."""
        if self.settings.anchor is not None:
            return self.settings.anchor
        if "anchor" in saved:
            return default_anchor(saved)
        return (self.settings.house[0].name, 0.0) if self.settings.house else None

    async def _unmake(self, made: bool) -> None:
        """A ladder that did not start leaves no database it made (nor the directory it made)."""
        db = self.db
        if db is None:
            if made:
                shutil.rmtree(self.directory, ignore_errors=True)
            return
        await self._db(db.close)
        self.db = None
        if not db.created:
            return
        if made:
            shutil.rmtree(self.directory, ignore_errors=True)
            return
        for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", LOCK_NAME):
            with contextlib.suppress(OSError):
                (self.directory / name).unlink()
        with contextlib.suppress(OSError):
            (self.directory / "logs").rmdir()

    async def _open(self, pool: EnginePool) -> None:
        """The server bound (when bots connect in) and the player ready."""
        s = self.settings
        if s.endpoint is not None:
            if s.keys is None:
                raise LadderError("a ladder serves with keys: give --keys DIR (quarto-arena keys new NAME --dir DIR)")
            keys = self._read_keys()
            self._keys = keys
            admitted = self._admitted(keys)
            self.server = Server(s.endpoint, admitted.bots.values(), keys=admitted, wait=0.0)
            # Bots connected with --stay connect again and wait for the ladder's return; others end.
            self.server.farewell = "the ladder stops (the same command continues it)"
            if s.open:
                self.server.register = self._register
            for name, reason in self._banned.items():
                self.server.bar(name, reason)
            pool.connector = self._lease
            for name in admitted.bots.values():
                pool.add(EngineConfig(name, remote=name))
            try:
                await self.server.start()
            except ServerError as e:
                raise LadderError(str(e)) from None
        self._player = LocalPlayer(pool, on_turn=self.on_event)
        for name in self._house:
            self._online[name] = s.house_slots
            self._games.setdefault(name, 0)
        self._announce()

    async def _close(self, pool: EnginePool) -> None:
        pairs = [p.task for p in self._pairs.values() if p.task is not None]
        for task in pairs:
            task.cancel()
        await asyncio.gather(*pairs, return_exceptions=True)
        try:
            await pool.close()
        finally:
            if self.server is not None:
                await self.server.close()
            if self.db is not None:
                await self._db(self.db.close)

    async def _lease(self, config: EngineConfig, transcript: Transcript | None) -> Transport:
        """The engine pool's connector: a session on the bot's slot, noted as begun for the game being played."""
        assert self.server is not None
        transport = await self.server.lease(config, transcript)
        leased = _LEASED.get()
        if leased is not None and config.remote is not None:
            leased.add(config.remote)
        return transport

    # --- who may connect

    def _read_keys(self) -> ServerKeys:
        """The keys directory, read now (at the start, before any game)."""
        return self._take_keys(self._load_keys())

    def _load_keys(self) -> tuple[ServerKeys, list[str]]:
        """Reads the keys directory (safe in a thread: it reads only); a file that cannot be read keeps the key it
        had. Raises :class:`LadderError`."""
        assert self.settings.keys is not None
        server = self.server
        previous = server.keys.bots if server is not None and server.keys is not None else None
        try:
            return load_keys_directory(self.settings.keys, previous)
        except KeysError as e:
            raise LadderError(str(e)) from None

    def _take_keys(self, loaded: tuple[ServerKeys, list[str]]) -> ServerKeys:
        """The keys read, told (each problem one line) and without the house engines' names."""
        keys, problems = loaded
        for problem in problems:
            if problem not in self._keys_told:  # told once, not at every change of the directory
                self.on_event(Notice(f"keys: {problem}"))
        self._keys_told = set(problems)
        clash = sorted(set(keys.bots.values()) & self._house)
        if clash:
            self.on_event(Notice(f"keys: left out {', '.join(clash)}: the name of a house engine"))
            keys = replace(keys, bots={k: n for k, n in keys.bots.items() if n not in self._house})
        return keys

    def _admitted(self, keys: ServerKeys) -> ServerKeys:
        """The keys directory's keys and the registered ones; a name in the keys directory is reserved: a key that
        registered it earlier (``--open``) is no longer let in."""
        reserved = set(keys.bots.values())
        registered = {}
        for key, name in self._registered.items():
            if name in reserved and key not in keys.bots:
                continue
            registered[key] = name
        return replace(keys, bots={**registered, **keys.bots})

    def _register(self, name: str, key: str, address: str) -> str | None:
        """The server's registration of an unknown key (``--open``): None once ``name`` is the key's, else why not."""
        assert self.server is not None and self._keys is not None and self._player is not None
        host = address.rpartition(":")[0] or address
        protected = self._house | set(BUILTIN)
        taken = self._names | set(self._keys.bots.values()) | set(self._registered.values())
        why = name_problem(name, taken, protected)
        if why is None and len(taken) >= MAX_BOTS:
            why = f"the ladder is full ({MAX_BOTS} bots)"
        if why is None:
            why = self._registrations.allows(host, time.monotonic())
        if why is not None:
            return why
        self._registrations.take(host, time.monotonic())
        self._registered[key.encode()] = name
        self._names.add(name)
        assert self.db is not None
        self._learning.add(asyncio.create_task(self._record(self.db.register, name, key, host)))
        self._player.pool.add(EngineConfig(name, remote=name))
        admitted = self._admitted(self._keys)
        self.server.allow(admitted.bots.values(), admitted)
        self.on_event(Notice(f"registered: {name} (key {key}, from {host})"))
        return None

    async def _watch_keys(self) -> None:
        """Follows the keys directory: a new key lets its bot in, a removed one cuts it (its pairs abandoned). The
        directory and its files are read in a thread: whatever is put there, the games' clocks never wait for it."""
        server = self.server
        assert server is not None and self.settings.keys is not None
        self._keys_seen = await asyncio.to_thread(keys_signature, self.settings.keys)
        while True:
            await asyncio.sleep(KEYS_POLL)
            seen = await asyncio.to_thread(keys_signature, self.settings.keys)
            if seen == self._keys_seen or seen is None:
                continue
            self._keys_seen = seen
            try:
                keys = self._take_keys(await asyncio.to_thread(self._load_keys))
            except LadderError as e:
                self.on_event(Notice(f"keys: {e}; keeping the keys as they were"))
                continue
            self._keys = keys
            admitted = self._admitted(keys)
            names = set(admitted.bots.values())
            old = {name: key for key, name in (server.keys.bots if server.keys else {}).items()}
            new = {name: key for key, name in admitted.bots.items()}
            leaving = [name for name in old if old[name] != new.get(name)]
            await self._abandon_pairs(set(leaving), "its key was removed or changed")
            assert self._player is not None
            for name in names - set(old):
                self._player.pool.add(EngineConfig(name, remote=name))
            for name in sorted(names - set(old)):
                self.on_event(Notice(f"key added: {name} may connect"))
            for name in sorted(set(old) - names):
                self.on_event(Notice(f"key removed: {name} is cut"))
            server.allow(names, admitted)
            self._wake.set()

    async def _watch_journal(self) -> None:
        """Follows the database's journal: a ban cuts the bot (its pairs abandoned) and refuses it from then on; an
        unban lets it in again; a retirement is the next refit's."""
        assert self.db is not None
        while True:
            await asyncio.sleep(JOURNAL_POLL)
            for row in await self._db(self.db.journal, self._journal):
                self._journal = row.id
                if row.action == "ban":
                    self._banned[row.name] = row.detail or "banned by the operator"
                    await self._abandon_pairs({row.name}, f"{row.name} was banned")
                    if self.server is not None:
                        self.server.bar(row.name, self._banned[row.name])
                    self.on_event(Notice(f"banned: {row.name} ({self._banned[row.name]})"))
                elif row.action == "unban":
                    self._banned.pop(row.name, None)
                    if self.server is not None:
                        self.server.bar(row.name, None)
                    self.on_event(Notice(f"unbanned: {row.name}"))
                elif row.action == "retire":
                    self._counted_at_fit = -1  # refit: the version leaves the board
                    self.on_event(Notice(f"retired: {row.name}"))
                self._wake.set()

    async def _abandon_pairs(self, bots: set[str], why: str) -> None:
        doomed = [p for p in self._pairs.values() if (p.a in bots or p.b in bots) and p.task is not None]
        for p in doomed:
            assert p.task is not None
            p.task.cancel()
        await asyncio.gather(*(p.task for p in doomed if p.task is not None), return_exceptions=True)
        if doomed:
            log.info("ladder: %d pair(s) abandoned: %s", len(doomed), why)

    # --- who is online

    def _learn(self, name: str, met: dict[str, int]) -> None:
        """What the database knows of ``name``'s meetings (pairs: two games), once per process: a bot is paired only
        once its history is known (a query of its own, when it first comes online)."""
        if name in self._learned:
            return
        self._learned.add(name)
        for other, games in met.items():
            key = pair_key(name, other)
            if other not in self._learned:  # a bot learned already counted these games from its side
                self._met[key] = self._met.get(key, 0) + (games + 1) // 2

    async def _record(self, fn: Callable[..., object], *args: Any) -> None:
        """A write the loop does not wait for (a registration): its failure stops the ladder as a game's would."""
        try:
            await self._db(fn, *args)
        except (LadderDBError, ArenaFault) as e:
            self._failure = self._failure or e
            self._wake.set()

    async def _learn_later(self, name: str) -> None:
        assert self.db is not None
        try:
            met = await self._db(self.db.met, name)
        except LadderDBError as e:
            self._failure = self._failure or e
            return
        self._learn(name, met)
        self._wake.set()

    def _look(self) -> bool:
        """Refreshes who is online and with how many slots; True when that changed."""
        online = {name: self.settings.house_slots for name in self._house if name not in self._banned}
        if self.server is not None:
            online.update(self.server.connected(leaving=False))
        if online == self._online:
            return False
        low = min((self._games.get(n, 0) for n in self._online if n in online), default=0)
        came = [n for n in online if n not in self._online]
        for name in came:
            self._games[name] = low
        for name in [n for n in self._games if n not in online]:
            del self._games[name]
        self._online = online
        if came and self.db is not None:
            remote = [n for n in came if n not in self._house]
            if remote:
                asyncio.get_running_loop().run_in_executor(self._writer, self.db.seen, remote)
            for name in remote:
                if name not in self._learned:
                    self._learning.add(asyncio.create_task(self._learn_later(name)))
        self._announce()
        return True

    def _announce(self) -> None:
        self.on_event(BotsChanged(dict(self._online)))

    def _conduct_of(self, name: str) -> Conduct:
        conduct = self._conduct.get(name)
        if conduct is None:
            conduct = self._conduct[name] = Conduct()
        return conduct

    def _slots(self, name: str, now: float) -> int:
        """Games at once bot ``name`` may have now: a house engine's slots; a bot's earned slots (0 when benched)."""
        offered = self._online.get(name, 0)
        if name in self._banned:
            return 0
        return offered if name in self._house else self._conduct_of(name).slots(offered, now)

    def _allowed(self, name: str) -> bool:
        """True while a bot may connect (a house engine; a bot whose key is known to the server)."""
        if name in self._house:
            return True
        return self.server is not None and self.server.keys is not None and name in self.server.keys.bots.values()

    def _present(self, name: str) -> bool:
        """Connected and not leaving (a house engine: not banned)."""
        if name in self._house:
            return name not in self._banned
        return self.server is not None and name in self.server.connected(leaving=False)

    # --- pairs

    async def _serve(self, stop: asyncio.Event) -> None:
        watchers = [asyncio.create_task(self._watch_journal()), asyncio.create_task(self._refits(stop))]
        if self.server is not None:
            watchers.append(asyncio.create_task(self._watch_keys()))
        stopper = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                self._look()
                self._start_pairs()
                self._wake.clear()
                waits: list[asyncio.Future[Any]] = [stopper, asyncio.ensure_future(self._wake.wait())]
                if self.server is not None:
                    waits.append(asyncio.ensure_future(self.server.changed(_IDLE)))
                else:
                    waits.append(asyncio.ensure_future(asyncio.sleep(_IDLE)))
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for w in waits[1:]:
                    w.cancel()
                for watcher in watchers:
                    if watcher.done():
                        watcher.result()  # its error, if it failed
                if self._failure is not None:
                    if isinstance(self._failure, LadderDBError):
                        raise LadderError(f"{self._failure}; the ladder stops (the games counted are safe)")
                    raise self._failure
        finally:
            stopper.cancel()
            for watcher in watchers:
                watcher.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)

    def _start_pairs(self) -> None:
        room = self.settings.concurrency - len(self._pairs)
        if room <= 0:
            return
        taken: dict[str, int] = {}
        for p in self._pairs.values():
            for n in (p.a, p.b):
                taken[n] = taken.get(n, 0) + 1
        clock = time.monotonic()
        self._learning = {t for t in self._learning if not t.done()}
        free = {
            name: max(0, self._slots(name, clock) - taken.get(name, 0)) if name in self._learned else 0
            for name in self._online
        }
        shy = frozenset(n for n in self._online if n in self._conduct and self._conduct[n].shy)
        for a, b in next_pairs(Pairing(free, self._games, self._met, shy), room):
            pair = _Pair(self._next_pair, a, b)
            self._next_pair += 1
            for n in (a, b):
                self._games[n] = self._games.get(n, 0) + 2
            key = pair_key(a, b)
            self._met[key] = self._met.get(key, 0) + 1
            self._pairs[pair.number] = pair
            pair.task = asyncio.create_task(self._play_pair(pair))

    def _spec(self, pair: _Pair, live: int) -> GameSpec:
        game = self.settings.game
        return game.game(game.book.opening(pair.number - 1), game_id=live, round=pair.number)

    async def _play_pair(self, pair: _Pair) -> None:
        opening = self.settings.game.book.opening(pair.number - 1)
        stayed: set[str] = set()  # present when the first game ended
        try:
            for index, (first, second) in enumerate(((pair.a, pair.b), (pair.b, pair.a))):
                gone = [n for n in (first, second) if not self._present(n) or self._benched(n)]
                if gone:
                    if index == 1:
                        await self._leave_pair(pair, first, second, gone, stayed)
                    return  # a bot gone before its first game: the pair is dropped, nothing played
                live = self._next_live
                self._next_live += 1
                game = ScheduledGame(live, pair.number, pair.number, first, second, opening)
                self.on_event(GameStarted(game))
                aborted: list[GameRecord] = []
                leased: set[str] = set()
                _LEASED.set(leased)
                assert self._player is not None
                try:
                    record = await self._player.play(game, self._spec(pair, live), aborted.append)
                except asyncio.CancelledError:
                    for r in aborted:
                        await asyncio.shield(self._abandon(r, pair.number))
                    raise
                finally:
                    self.on_event(GameEnded(game))
                if record.termination is Termination.ABORTED:
                    await self._abandon(record, pair.number)
                    return
                loser = _loser(record)
                failed = loser is not None and record.termination.is_failure
                if failed and loser not in self._house and loser not in leased:
                    # The loser's session never began: it was gone between the pair's check and its lease. (Its
                    # opponent's may not have begun either: the game ended before its turn to be leased came.)
                    if index == 0:
                        await self._abandon(record, pair.number)
                    else:
                        await self._leave_pair(pair, first, second, [str(loser)], stayed)
                    return
                present = {n for n in (first, second) if self._present(n)}
                number = await asyncio.shield(self._count(record, pair.number))
                self._judge(record)
                dropped = record.termination is Termination.DISCONNECT and not _shook(record, loser)
                if index == 1 and dropped and loser in stayed:
                    # Gone between the games, only after its session began: lost by disconnect all the same, and
                    # a dodge as much as if it had gone a moment earlier.
                    assert self.db is not None
                    other = second if loser == first else first
                    await self._db(self.db.add_dodge, str(loser), other, pair.number, number)
                stayed = present
        except ArenaFault as e:  # the arena is short of files, memory or disk: no engine's fault, the ladder stops
            if isinstance(e.record, GameRecord):
                with contextlib.suppress(Exception):  # the disk may be what is full
                    await asyncio.shield(self._abandon(e.record, pair.number))
            self._failure = self._failure or e
        except Exception as e:  # the database cannot be written, or a bug: the ladder stops (the games are safe)
            self._failure = self._failure or e
        finally:
            self._pairs.pop(pair.number, None)
            self._wake.set()

    def _benched(self, name: str) -> bool:
        return name not in self._house and self._conduct_of(name).slots(1, time.monotonic()) == 0

    def _judge(self, record: GameRecord) -> None:
        """Earned slots and benches after a counted game (:mod:`.rules`): a slot earned by a game the bot played
        (its handshake done: a win by its opponent's forfeit before it answered anything earns nothing), a bench
        for a stall."""
        idents = list(record.engines)
        for side, name in enumerate((record.first, record.second)):
            if name in self._house:
                continue
            conduct = self._conduct_of(name)
            handshake = side < len(idents) and idents[side].protocol is not None
            lost = record.result is (Result.SECOND_WINS if side == 0 else Result.FIRST_WINS)
            if lost and record.termination.is_failure:
                if stalled(record.termination, handshake):
                    pause = conduct.stall(time.monotonic())
                    self.on_event(Notice(f"{name} stalled ({record.termination.value}): given no game for {pause:g} s"))
            elif handshake:
                conduct.finished(self._online.get(name, 1))

    async def _leave_pair(self, pair: _Pair, first: str, second: str, gone: list[str], stayed: set[str]) -> None:
        """The second game of a pair with a bot gone (:func:`.rules.charge_leave`): lost by that bot, or let go; a
        dodge recorded either way. Both gone: nobody is charged. A bot benched for stalling the first loses the second
        by stall, without play (no dodge)."""
        assert self.db is not None
        gone = [n for n in gone if n not in self._banned and self._allowed(n)]  # cut by the arena: no dodge
        if not gone:
            return
        if len(gone) == 2:
            for name in gone:
                other = second if name == first else first
                await self._db(self.db.add_dodge, name, other, pair.number, None)
            return
        (name,) = gone
        other = second if name == first else first
        since = time.time() - LEAVE_WINDOW
        lately = await self._db(self.db.recent_leaves, name, _iso(since))
        benched = self._benched(name) and self._present(name)
        said = self.server is not None and (name in self.server.left or name in self.server.connected(leaving=True))
        if not (benched or charge_leave(name in stayed and not said, lately)):
            await self._db(self.db.add_dodge, name, other, pair.number, None)
            log.info("ladder: %s left during pair %d; its second game is dropped", name, pair.number)
            return
        opening = self.settings.game.book.opening(pair.number - 1)
        why = "was given no game after stalling" if benched else "left before the second game of its pair"
        record = GameRecord(
            first,
            second,
            Result.SECOND_WINS if name == first else Result.FIRST_WINS,
            Termination.STALL if benched else Termination.DISCONNECT,
            f"{name} {why}: lost without play",
            variant=variant_text(self.settings.game.variant),
            time_control=self.settings.game.time_control.text,
            start=opening.start,
            opening=opening.turns,
            turns=tuple(TurnRecord(t, 0) for t in opening.turns),
            started=now(),
        )
        number = await asyncio.shield(self._count(record, pair.number))
        if not benched:  # a stall is no dodge: it is counted as the stall it is
            await self._db(self.db.add_dodge, name, other, pair.number, number)

    async def _count(self, record: GameRecord, pair: int) -> int:
        assert self.db is not None
        number = await self._db(self.db.add_game, record, pair)
        self.counted += 1
        self.on_event(GameCounted(replace(record, game_id=number, round=pair)))
        return number

    async def _abandon(self, record: GameRecord, pair: int) -> None:
        assert self.db is not None
        reason = record.detail or "abandoned"
        await self._db(self.db.add_abandoned, record, pair, reason)
        self.abandoned += 1

    # --- ratings

    async def _refits(self, stop: asyncio.Event) -> None:
        """Refits whenever games were counted (or a version retired), at most once a second and a tenth of the time;
        stores each fit. A fit that fails is logged in one line and tried again later."""
        assert self.db is not None
        took = 0.0
        retry = _FIT_RETRY
        while not stop.is_set():
            counted = self._at_start + self.counted
            fresh = counted != self._counted_at_fit
            if fresh or self.standings is None:
                began = time.monotonic()
                try:
                    fitted, ratings = await self._fitter.fit(self.directory / DB_NAME, self.anchor, fresh)
                except (LadderDBError, OSError, EOFError) as e:
                    log.warning("ladder: the ratings could not be refitted (%s); trying again in %g s", e, retry)
                    await asyncio.sleep(retry)
                    retry = min(60.0, retry * 2)
                    continue
                retry = _FIT_RETRY
                if ratings:
                    anchor = self.anchor if fitted.anchor is not None else None
                    await self._db(self.db.save_fit, fitted.through, fitted.games, anchor, ratings)
                self._counted_at_fit = counted
                self.standings = fitted
                self.on_event(RatingsChanged(fitted))
                took = time.monotonic() - began
            await asyncio.sleep(max(_FIT_EVERY, took / _FIT_SHARE))

    # --- what the pages ask

    @property
    def online(self) -> dict[str, int]:
        """Slots of each bot online now."""
        return dict(self._online)

    def busy(self) -> dict[str, int]:
        """Pairs in flight per bot."""
        out: dict[str, int] = {}
        for p in self._pairs.values():
            for n in (p.a, p.b):
                out[n] = out.get(n, 0) + 1
        return out


def _shook(record: GameRecord, name: str | None) -> bool:
    """True when bot ``name`` finished its handshake in this game."""
    idents = list(record.engines)
    side = 0 if name == record.first else 1
    return side < len(idents) and idents[side].protocol is not None


def _loser(record: GameRecord) -> str | None:
    """The bot that lost the game (None for a draw)."""
    if record.result is Result.FIRST_WINS:
        return record.second
    return record.first if record.result is Result.SECOND_WINS else None


def _progress(line: str) -> None:
    """A migration's progress (from the database's thread: a log line)."""
    log.info("ladder: %s", line)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
