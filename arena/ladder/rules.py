"""The ladder's rules for its members, as pure values and functions (a clock is passed in, never read): tested
without sockets, applied by :mod:`.service`.

- *Slots are earned* (:class:`Conduct`): a bot is given at most as many games at once as it has finished lately. It
  starts with one slot however many it offers, gains one per game it finishes without a failure of its own, and
  falls back to one at each stall; so a bot that offers sixteen slots and answers nothing holds one opponent at a
  time, not sixteen.
- *Stalls are benched*: a game lost because the bot never finished its handshake (or stalled on ``isready`` or
  ``newgame``) counts as lost, and the bot is given no game for :data:`BENCH` seconds, doubled at each stall in a
  row (at most :data:`BENCH_MAX`), until it finishes a game again.
- *A pair is owed in full*: see :func:`charge_leave` (the dodging rule).
- *Joining at will* (``--open``): :func:`name_problem` (what a name may be) and :class:`Registrations` (how many
  new bots a minute, from one address and in all).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from ..records import Termination

__all__ = [
    "BENCH",
    "BENCH_MAX",
    "LEAVES_FREE",
    "LEAVE_WINDOW",
    "NAME_MAX",
    "REGISTRATIONS",
    "REGISTRATIONS_PER_ADDRESS",
    "Conduct",
    "Registrations",
    "charge_leave",
    "name_problem",
    "stalled",
]

BENCH: Final = 30.0
"""Seconds a bot is given no game after its first stall; doubled at each further stall in a row. A stall holds an
opponent for the start-up deadline (10 s): a bot that stalls every game it is given holds one for at most a quarter
of the time, then less and less."""
BENCH_MAX: Final = 3600.0
"""The longest pause."""
LEAVES_FREE: Final = 3
"""Mid-pair leaves let go (not charged) per :data:`LEAVE_WINDOW`; beyond them every one is charged."""
LEAVE_WINDOW: Final = 24 * 3600.0
"""Seconds over which mid-pair leaves are counted."""
NAME_MAX: Final = 32
"""The longest name a bot may register with (``--open``)."""
REGISTRATIONS_PER_ADDRESS: Final = (5, 3600.0)
"""New bots from one address: a token bucket of 5 that fills again in an hour (5 at once, then one every 12
minutes)."""
REGISTRATIONS: Final = (60, 3600.0)
"""New bots in all: a token bucket of 60 that fills again in an hour (60 at once, then one a minute)."""
_ADDRESSES: Final = 10_000  # addresses remembered by the registration limit (the oldest forgotten beyond)
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")
_RESERVED: Final = ("arena", "house", "admin", "operator", "quarto", "ladder", "retired")


def stalled(termination: Termination, handshake: bool) -> bool:
    """True for a lost game that held its opponent waiting: a stall (handshake, isready, newgame), or any failure
    before the bot's handshake was done (it disconnected while its opponent waited)."""
    return termination is Termination.STALL or (termination.is_failure and not handshake)


class Conduct:
    """One bot's standing with the matchmaking: the slots it has earned and its bench (see the module's docstring)."""

    __slots__ = ("benched_until", "earned", "strikes")

    @property
    def shy(self) -> bool:
        """It stalled since it last finished a game: nobody waits for it (:attr:`~.matchmaking.Pairing.shy`)."""
        return self.strikes > 0

    def __init__(self) -> None:
        self.earned = 1
        """Games at once it may be given (whatever it offers beyond)."""
        self.strikes = 0
        """Stalls in a row."""
        self.benched_until = 0.0
        """Monotonic time before which it is given no game."""

    def slots(self, offered: int, now: float) -> int:
        """Games at once it may have now: what it earned, at most what it offers; 0 while benched."""
        return 0 if now < self.benched_until else min(offered, self.earned)

    def finished(self, offered: int) -> None:
        """It finished a game without a failure of its own: one more slot earned (up to what it offers)."""
        self.strikes = 0
        self.earned = min(max(1, offered), self.earned + 1)

    def stall(self, now: float) -> float:
        """It stalled a game: back to one slot, benched for a pause that doubles with each stall in a row. Returns
        the pause."""
        self.strikes += 1
        self.earned = 1
        pause = min(BENCH_MAX, BENCH * 2.0 ** (self.strikes - 1))
        self.benched_until = now + pause
        return pause


def charge_leave(dodged: bool, leaves_lately: int) -> bool:
    """Whether a bot gone before the second game of its pair loses that game (by disconnect, counted).

    It does when it ``dodged``: it was there, and not leaving, when the first game ended, and then disconnected
    without saying ``leaving`` (it went once it saw that result). A bot that left otherwise (it said ``leaving``, as
    the SDK and the bridge do on Ctrl-C, or its connection dropped during the first game, which it lost by
    disconnect) is let go, :data:`LEAVES_FREE` times in :data:`LEAVE_WINDOW`; beyond that every such leave is charged
    too (a repeat dodger gains nothing by leaving cleanly)."""
    return dodged or leaves_lately >= LEAVES_FREE


def name_problem(name: str, taken: set[str], protected: set[str]) -> str | None:
    """Why ``name`` cannot be registered (None: it can): its length and characters; a name taken (``taken``: every
    other key's bot, reserved keys' names), compared without case and punctuation (``Alice_`` is ``alice``); or a
    name that passes for a house or built-in engine's (``protected``: ``perfect2`` and ``Perfect-bot`` are refused
    while ``perfect`` plays here), or the arena's own words."""
    if not 1 <= len(name) <= NAME_MAX or not _NAME.match(name) or ".." in name:
        return (
            f"{name[:40]!r} is not a valid name: 1-{NAME_MAX} characters from A-Z a-z 0-9 _ . -, starting with a"
            " letter or digit"
        )
    folded = _fold(name)
    for other in sorted(taken):
        if folded == _fold(other):
            why = (
                "belongs to another key"
                if name == other
                else f"is too close to {other!r}, which belongs to another key"
            )
            return f"the name {name!r} {why}"
    for other in sorted({*protected, *_RESERVED}):
        if folded.startswith(_fold(other)):
            return f"the name {name!r} passes for {other!r}, a name of the arena's own: choose another"
    return None


def _fold(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class Registrations:
    """The rate of new bots (``--open``): a token bucket per address and one for all (:data:`REGISTRATIONS_PER_ADDRESS`,
    :data:`REGISTRATIONS`). An address is the peer's IP address (its port aside)."""

    def __init__(
        self,
        per_address: tuple[int, float] = REGISTRATIONS_PER_ADDRESS,
        overall: tuple[int, float] = REGISTRATIONS,
    ) -> None:
        self.per_address = per_address
        self.overall = overall
        self._all: _Bucket | None = None
        self._by_address: OrderedDict[str, _Bucket] = OrderedDict()

    def _level(self, bucket: _Bucket | None, limit: tuple[int, float], now: float) -> _Bucket:
        size, period = limit
        if bucket is None:
            return _Bucket(float(size), now)
        bucket.tokens = min(float(size), bucket.tokens + (now - bucket.at) * size / period)
        bucket.at = now
        return bucket

    def allows(self, address: str, now: float) -> str | None:
        """None when a registration from ``address`` may go ahead now; else why not (one line)."""
        overall = self._all = self._level(self._all, self.overall, now)
        mine = self._level(self._by_address.get(address), self.per_address, now)
        if mine.tokens < 1.0:
            size, period = self.per_address
            return f"{size} new bots from {address} in {period / 60:g} minutes at most: try later"
        if overall.tokens < 1.0:
            return f"{self.overall[0]} new bots in {self.overall[1] / 60:g} minutes at most: try later"
        return None

    def take(self, address: str, now: float) -> None:
        """Counts a registration from ``address`` (after :meth:`allows`)."""
        overall = self._all = self._level(self._all, self.overall, now)
        mine = self._level(self._by_address.pop(address, None), self.per_address, now)
        overall.tokens -= 1.0
        mine.tokens -= 1.0
        self._by_address[address] = mine
        while len(self._by_address) > _ADDRESSES:
            self._by_address.popitem(last=False)
