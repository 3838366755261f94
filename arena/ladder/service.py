"""The standing arena: bots connect in whenever they like (any public key in the keys directory), pairs are made
among whoever is online (:mod:`.matchmaking`), and every game is counted in ``DIR/ladder.db`` (:mod:`.db`).

The server is :class:`~quarto_arena.arena.server.Server` as runs use it (CurveZMQ, heartbeats, limits per
connection); the ladder changes who it lets in (:meth:`Server.allow`) as the keys directory changes, looked at
every :data:`KEYS_POLL` seconds. Games are played by :class:`~quarto_arena.arena.run.LocalPlayer` over one
:class:`~quarto_arena.arena.run.EnginePool` (the house engines' processes here, the bots' sessions leased from the
server), so a game on the ladder is refereed exactly as in a tournament.

What happens when:

- a bot connects: it may be paired at once (its games-while-online count starts at the lowest of those online, so
  it neither waits nor jumps the queue); its ``last_seen`` is noted.
- a bot disconnects mid-game: it loses that game by disconnect (counted, as in a run); the rest of its pair is
  dropped (not played later: the matchmaking pairs it again once it is back).
- its key is removed: its pairs in flight are cancelled first (their games abandoned, kept in ``abandoned``, not
  counted), then the server cuts its connection.
- the ladder is stopped (SIGINT, SIGTERM, SIGHUP): every pair in flight is cancelled (games abandoned and kept as
  such), engines are ended, the bots' connections closed, the database closed. The same command continues it.
- the ladder is killed: games in flight are lost (never counted), counted ones are on disk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, TypeVar

from ..engine import Deadlines, EngineConfig
from ..errors import ArenaError, ArenaFault
from ..records import GameRecord, Termination
from ..referee import GameSpec
from ..run import EnginePool, Event, GameEnded, GameStarted, LocalPlayer, Notice
from ..schedule import STARTPOS, OpeningBook, ScheduledGame
from ..server import KeysError, Server, ServerError, keys_signature, load_keys_directory
from ..timecontrol import TimeControl
from ..transport import DEFAULT_STDERR_LIMIT, Transcript
from .db import LadderDB, LadderDBError, ResultRow
from .matchmaking import Pairing, next_pairs, pair_key

__all__ = ["HOUSE_SLOTS", "KEYS_POLL", "BotsChanged", "GameCounted", "Ladder", "LadderError", "LadderSettings"]

log = logging.getLogger(__name__)

KEYS_POLL: Final = 1.0
"""Seconds between two looks at the keys directory: a key added or removed takes effect within this (and the
handshake's time)."""
HOUSE_SLOTS: Final = 2
"""Games at once of each house engine (local processes: each slot is one process)."""
_IDLE: Final = 1.0  # s between two looks at who is free when nothing changes

T = TypeVar("T")


class LadderError(ArenaError):
    """A ladder that cannot start (a bad setting, keys, an endpoint in use, a database that is not a ladder's)."""

    reason = "ladder"


@dataclass(frozen=True, slots=True)
class LadderSettings:
    """How the ladder plays: given on each ``ladder run`` (the same command continues a ladder)."""

    house: tuple[EngineConfig, ...] = ()
    """Local engines that are always online."""
    endpoint: str | None = None
    """Where bots connect in (None: house engines only)."""
    keys: Path | None = None
    """The keys directory: ``arena.key_secret`` and a ``NAME.key`` per bot."""
    concurrency: int = 1
    """Games at once (pairs in flight)."""
    time_control: TimeControl = field(default_factory=lambda: TimeControl.parse("st=1"))
    """Every game's time control."""
    spec: GameSpec = field(default_factory=GameSpec)
    """The variant, margin and adjudication (start, opening and names are set per game)."""
    book: OpeningBook = field(default_factory=OpeningBook)
    """The openings: pair N opens with opening N."""
    log_limit: int = DEFAULT_STDERR_LIMIT
    """Bytes of each engine's stderr kept in ``DIR/logs``."""
    house_slots: int = HOUSE_SLOTS
    """Games at once of each house engine."""

    def describe(self) -> dict[str, Any]:
        """The settings as plain values, for the database's ``settings`` table (for people)."""
        return {
            "house": [e.name for e in self.house],
            "endpoint": self.endpoint,
            "keys": None if self.keys is None else str(self.keys),
            "concurrency": self.concurrency,
            "tc": self.time_control.text,
            "variant": self.spec.variant.describe(),
            "margin_ms": self.spec.margin_ms,
            "adjudicate": self.spec.adjudicate,
            "openings": self.book.identity(),
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


LadderEvent = Event | GameCounted | BotsChanged


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
        self._deadlines = deadlines
        self._transcript = transcript
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ladder-db")
        self._pairs: dict[int, _Pair] = {}
        self._next_pair = 1
        self._next_live = 1
        self._games: dict[str, int] = {}
        self._met: dict[tuple[str, str], int] = {}
        self._online: dict[str, int] = {}
        self._keys_seen: object = None
        self._keys_told: set[str] = set()  # the keys directory's problems told already (each told once)
        self._wake = asyncio.Event()
        self._house = {e.name for e in settings.house}
        self._player: LocalPlayer | None = None
        self._failure: Exception | None = None
        self.ready = asyncio.Event()
        """Set once the database is open and the server listens (the games begin)."""
        self.counted = 0
        """Games counted by this process."""
        self.abandoned = 0
        """Games abandoned by this process."""

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """Runs a database call on the ladder's own thread (SQLite's commit waits for the disk; the loop must not)."""
        return await asyncio.get_running_loop().run_in_executor(self._writer, fn, *args)

    # --- lifetime

    async def run(self, stop: asyncio.Event) -> None:
        """Opens the database, serves, plays until ``stop``; then abandons the games in flight (kept as such), ends
        every engine and connection, and closes the database. Raises :class:`LadderError` before any game."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / "logs").mkdir(exist_ok=True)
        except OSError as e:
            raise LadderError(f"{self.directory}: cannot create it: {e.strerror or e}") from None
        from .db import DB_NAME

        try:
            db = self.db = await self._db(LadderDB.open, self.directory / DB_NAME)
            await self._db(db.save_settings, self.settings.describe())
            for name in self._house:
                await self._db(functools.partial(db.bot, name, house=True))
            results = await self._db(db.results)
            self._next_pair = await self._db(db.last_pair) + 1
        except LadderDBError as e:
            raise LadderError(str(e)) from None
        self._learn(results)
        pool = EnginePool(
            self.settings.house,
            deadlines=self._deadlines,
            log_dir=self.directory / "logs",
            log_limit=self.settings.log_limit,
            transcript=self._transcript,
        )
        try:
            await self._open(pool)
            self.ready.set()
            await self._serve(stop)
        finally:
            await asyncio.shield(self._close(pool))

    async def _open(self, pool: EnginePool) -> None:
        """The server bound (when bots connect in) and the player ready."""
        s = self.settings
        if s.endpoint is not None:
            if s.keys is None:
                raise LadderError("a ladder serves with keys: give --keys DIR (quarto-arena keys new NAME --dir DIR)")
            keys = self._read_keys()
            self.server = Server(s.endpoint, keys.bots.values(), keys=keys, wait=0.0)
            # Bots connected with --stay connect again and wait for the ladder's return; others end.
            self.server.farewell = "the ladder stops (the same command continues it)"
            pool.connector = self.server.lease
            for name in keys.bots.values():
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
            self._writer.shutdown(wait=True)

    def _learn(self, results: list[ResultRow]) -> None:
        """How often each two bots met (pairs: two games), from the counted games."""
        games: dict[tuple[str, str], int] = {}
        for r in results:
            key = pair_key(r.first, r.second)
            games[key] = games.get(key, 0) + 1
        self._met = {key: (n + 1) // 2 for key, n in games.items()}

    # --- who is online

    def _read_keys(self) -> Any:
        """The keys directory, read now (at the start, before any game)."""
        return self._take_keys(self._load_keys())

    def _load_keys(self) -> tuple[Any, list[str]]:
        """Reads the keys directory (safe in a thread: it reads only); a file that cannot be read keeps the key it
        had. Raises :class:`LadderError`."""
        assert self.settings.keys is not None
        server = self.server
        previous = server.keys.bots if server is not None and server.keys is not None else None
        try:
            return load_keys_directory(self.settings.keys, previous)
        except KeysError as e:
            raise LadderError(str(e)) from None

    def _take_keys(self, loaded: tuple[Any, list[str]]) -> Any:
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
            names = set(keys.bots.values())
            old = {name: key for key, name in (server.keys.bots if server.keys else {}).items()}
            new = {name: key for key, name in keys.bots.items()}
            leaving = [name for name in old if old[name] != new.get(name)]
            await self._abandon_pairs(set(leaving), "its key was removed or changed")
            assert self._player is not None
            for name in names - set(old):
                self._player.pool.add(EngineConfig(name, remote=name))
            for name in sorted(names - set(old)):
                self.on_event(Notice(f"key added: {name} may connect"))
            for name in sorted(set(old) - names):
                self.on_event(Notice(f"key removed: {name} is cut"))
            server.allow(names, keys)
            self._wake.set()

    async def _abandon_pairs(self, bots: set[str], why: str) -> None:
        doomed = [p for p in self._pairs.values() if (p.a in bots or p.b in bots) and p.task is not None]
        for p in doomed:
            assert p.task is not None
            p.task.cancel()
        await asyncio.gather(*(p.task for p in doomed if p.task is not None), return_exceptions=True)
        if doomed:
            log.info("ladder: %d pair(s) abandoned: %s", len(doomed), why)

    def _look(self) -> bool:
        """Refreshes who is online and with how many slots; True when that changed."""
        online = {name: self.settings.house_slots for name in self._house}
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
        self._announce()
        return True

    def _announce(self) -> None:
        self.on_event(BotsChanged(dict(self._online)))

    # --- pairs

    async def _serve(self, stop: asyncio.Event) -> None:
        watcher = asyncio.create_task(self._watch_keys()) if self.server is not None else None
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
                if watcher is not None and watcher.done():
                    watcher.result()  # its error, if it failed
                if self._failure is not None:
                    if isinstance(self._failure, LadderDBError):
                        raise LadderError(f"{self._failure}; the ladder stops (the games counted are safe)")
                    raise self._failure
        finally:
            stopper.cancel()
            if watcher is not None:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)

    def _start_pairs(self) -> None:
        room = self.settings.concurrency - len(self._pairs)
        if room <= 0:
            return
        taken: dict[str, int] = {}
        for p in self._pairs.values():
            for n in (p.a, p.b):
                taken[n] = taken.get(n, 0) + 1
        free = {name: slots - taken.get(name, 0) for name, slots in self._online.items()}
        for a, b in next_pairs(Pairing(free, self._games, self._met), room):
            pair = _Pair(self._next_pair, a, b)
            self._next_pair += 1
            for n in (a, b):
                self._games[n] = self._games.get(n, 0) + 2
            key = pair_key(a, b)
            self._met[key] = self._met.get(key, 0) + 1
            self._pairs[pair.number] = pair
            pair.task = asyncio.create_task(self._play_pair(pair))

    def _online_now(self, name: str) -> bool:
        return name in self._house or (self.server is not None and name in self.server.connected(leaving=False))

    async def _play_pair(self, pair: _Pair) -> None:
        opening = self.settings.book.opening(pair.number - 1)
        try:
            for first, second in ((pair.a, pair.b), (pair.b, pair.a)):
                if not (self._online_now(first) and self._online_now(second)):
                    return  # one left: the rest of the pair is dropped
                live = self._next_live
                self._next_live += 1
                game = ScheduledGame(live, pair.number, pair.number, first, second, opening)
                spec = replace(
                    self.settings.spec,
                    time_control=self.settings.time_control,
                    start=None if opening.start == STARTPOS else opening.start,
                    opening=opening.turns,
                    game_id=live,
                    round=pair.number,
                )
                self.on_event(GameStarted(game))
                aborted: list[GameRecord] = []
                assert self._player is not None
                try:
                    record = await self._player.play(game, spec, aborted.append)
                except asyncio.CancelledError:
                    for r in aborted:
                        await asyncio.shield(self._abandon(r, pair.number))
                    raise
                finally:
                    self.on_event(GameEnded(game))
                if record.termination is Termination.ABORTED or self._gone_before(record):
                    await self._abandon(record, pair.number)
                    return
                await asyncio.shield(self._count(record, pair.number))
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

    def _gone_before(self, record: GameRecord) -> bool:
        """True for a game a bot never began: it left between the pair's check and its session (no handshake, and
        not connected now). Such a game is abandoned, not lost: the bot was not in it."""
        if not record.termination.is_failure:
            return False
        idents = list(record.engines)
        for side, name in enumerate((record.first, record.second)):
            shook = side < len(idents) and idents[side].protocol is not None
            if not shook and name not in self._house and not self._online_now(name):
                return True
        return False

    async def _count(self, record: GameRecord, pair: int) -> None:
        assert self.db is not None
        number = await self._db(self.db.add_game, record, pair)
        self.counted += 1
        self.on_event(GameCounted(replace(record, game_id=number, round=pair)))

    async def _abandon(self, record: GameRecord, pair: int) -> None:
        assert self.db is not None
        reason = record.detail or "abandoned"
        await self._db(self.db.add_abandoned, record, pair, reason)
        self.abandoned += 1

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
