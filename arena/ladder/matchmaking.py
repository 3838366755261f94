"""Who plays whom next on the ladder: a pure function of who is online (their free slots), how many games each has
had while online, and how often each pair has met. No I/O, no clock, no randomness: tested without sockets.

A *pair* is two games between two bots from one opening, colours swapped; it holds one slot of each bot while it
is played (its two games one after the other), so a bot with k slots is in at most k pairs, k games, at once.

What :func:`next_pairs` optimizes, in this order:

1. *Fair shares.* The free bot with the fewest games (played while online, plus those of its pairs in flight) is
   served first; so among bots online for the same period the games per bot stay close to their mean (each pair
   adds two games to both; the spread the benchmark measures is a few games).
2. *Everyone meets everyone.* That bot's opponent is the free bot it has met least (counting pairs in flight), so
   every two bots online together meet before any two meet twice as often, then the one with the fewest games.
3. *No rematch ahead of the queue.* A bot may wait rather than meet again an opponent it has met more than
   :data:`SLACK` times beyond its least-met opponent online (who is busy now): without this, two bots whose pairs
   always end together would only ever meet each other. Nobody waits for a bot in :attr:`Pairing.shy` (one that
   stalled lately: while it holds an opponent for its start-up deadline, the others play on).
4. Ties are broken by name, so the same state always gives the same pairs.

No bot is paired with itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["SLACK", "Pairing", "next_pairs", "pair_key"]

SLACK: Final = 1
"""Pairs two bots may have played beyond the least-met opponent of either before they are paired again."""


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The two names in a fixed order: the key of :class:`Pairing.met`."""
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True, slots=True)
class Pairing:
    """What the matchmaking sees."""

    free: Mapping[str, int]
    """Free slots of each bot online now (0 for a bot whose slots are all playing: it is online all the same)."""
    games: Mapping[str, int]
    """Games of each bot since it came online, its pairs in flight included (2 per pair)."""
    met: Mapping[tuple[str, str], int]
    """Pairs played (and in flight) by each two bots, keyed by :func:`pair_key`."""
    shy: frozenset[str] = frozenset()
    """Bots nobody waits for (rule 3): they are paired when free, but their being busy holds no one back."""


def next_pairs(state: Pairing, limit: int) -> list[tuple[str, str]]:
    """The pairs to start now, at most ``limit`` of them, each as ``(A, B)``: A gives the first piece in the pair's
    first game, B in its second (see the module docstring for the order)."""
    online = list(state.free)
    free = {name: n for name, n in state.free.items() if n > 0}
    games = {name: state.games.get(name, 0) for name in online}
    met = dict(state.met)
    out: list[tuple[str, str]] = []
    while len(out) < limit and len(free) >= 2:
        pair = _best(online, free, games, met, state.shy)
        if pair is None:
            break
        a, b = pair
        out.append(pair)
        for n in (a, b):
            games[n] += 2
            free[n] -= 1
            if not free[n]:
                del free[n]
        key = pair_key(a, b)
        met[key] = met.get(key, 0) + 1
    return out


def _best(
    online: list[str],
    free: dict[str, int],
    games: dict[str, int],
    met: dict[tuple[str, str], int],
    shy: frozenset[str],
) -> tuple[str, str] | None:
    """The next pair: the free bot with the fewest games that has a free opponent within :data:`SLACK` of its
    least-met opponent online (a shy one counted only when free), and the least-met such opponent."""
    for a in sorted(free, key=lambda n: (games[n], n)):
        least = min((met.get(pair_key(a, c), 0) for c in online if c != a and (c in free or c not in shy)), default=0)
        candidates = [n for n in free if n != a and met.get(pair_key(a, n), 0) <= least + SLACK]
        if candidates:
            return a, min(candidates, key=lambda n: (met.get(pair_key(a, n), 0), games[n], n))
    return None
