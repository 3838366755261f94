"""Rating tables: maximum-likelihood ratings of many players from their games (pure functions, no I/O).

The model is the one Ordo fits without ``-W`` and without a draw model: each game is scored 1, 1/2 or 0 for the
first player (White), the expected score of a player rated ``d`` points above the opponent is
``1 / (1 + 10 ** (-d / scale))`` (``scale`` = 400 is the logistic Elo scale), and the ratings are the maximum of the
log-likelihood ``sum(s * log(E) + (1 - s) * log(1 - E))`` over all games. At that maximum every player's expected
total score equals the points actually scored, which is exactly the condition Ordo solves. With
``first_player_advantage=True`` a common bonus ``w`` for White is fitted too (Ordo's ``-W``).

Ratings are fixed by the pool average being 0, or by an anchor player whose rating is given. Players who never
met, directly or through others, are in different pools; each pool is fitted on its own and has its own average
0, so ratings of different pools are not comparable (:attr:`PlayerRating.pool` says which pool a player is in).

No finite maximum exists when a pool's results are not "strongly connected" (Zermelo): someone scored 100% or
0%, or a group beat everyone outside it. The pool then splits into groups of players linked both ways by points
taken, and every pair of players from different groups who met has only one-sided results. Such a pool is fitted
with one virtual draw added to each of those cross-group pairs (a minimal version of BayesElo's virtual-draw
prior), so every rating stays finite and results inside a group keep their weight; the pool's players are marked
:attr:`PlayerRating.regularized` because their ratings then depend on that prior. When the first-player advantage
is fitted and White won (or lost) every game, a virtual draw is added to every pair that met. A player with no
game is listed with rating ``None``.

Error margins (95%) come from the covariance of the estimate: the inverse of the Fisher information (minus the
Hessian of the log-likelihood) with one rating held fixed, then moved to the pool-average constraint by the
linear map that centres the ratings (with an anchor, the anchor's margin is 0 and the others are relative to it).
This treats a draw as half a win with Bernoulli variance, so it is slightly conservative when draws are common.
Ordo estimates errors by simulation, so its numbers differ a little. The likelihood of superiority between two
players is ``Phi((r_a - r_b) / sd(r_a - r_b))`` with the same covariance.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from ..errors import ArenaError, ExitStatus
from .elo import ELO_SCALE, Z95, normal_cdf

__all__ = [
    "EXACT_PLAYERS",
    "MAX_GAMES",
    "MAX_PLAYERS",
    "PairRecord",
    "PlayerRating",
    "RatingError",
    "RatingTable",
    "ScoredGame",
    "rate",
]

# Newton's method on the rating likelihood: stop when no rating moves by more than this many points.
_NEWTON_TOLERANCE: Final = 1e-9
# Each Newton step is solved by conjugate gradients to this relative residual.
_CG_TOLERANCE: Final = 1e-10
EXACT_PLAYERS: Final = 120
"""Pools of up to this many players get the exact covariance (a dense inverse, O(players^3)); larger pools an
O(games) approximation (see :func:`_approximate_covariance`)."""
MAX_PLAYERS: Final = 10_000
"""Players :func:`rate` takes; more is a :class:`RatingError` (a fit's memory and time grow with them)."""
MAX_GAMES: Final = 1_000_000
"""Games :func:`rate` takes; more is a :class:`RatingError`."""
_MAX_STEP: Final = 2.0
"""The most any rating moves in one Newton step, in factors of ten in the odds (800 points on the Elo scale)."""
# A pool whose exact fit has not converged by then has no finite maximum (its ratings run away).
_NEWTON_MAX_ITERATIONS: Final = 200
_VALID_SCORES: Final = (0.0, 0.5, 1.0)


class RatingError(ArenaError, ValueError):
    """Games that cannot be rated as given: a score that is not 0, 1/2 or 1, a self-game, an unknown anchor."""

    status = ExitStatus.USAGE
    reason = "rating"


@dataclass(frozen=True, slots=True)
class ScoredGame:
    """One finished game, as the rating fit sees it."""

    white: str
    """The first player (in Quarto, the one who gives the first piece)."""
    black: str
    """The second player."""
    score: float
    """White's score: 1.0 win, 0.5 draw, 0.0 loss."""
    count: int = 1
    """How many such games this stands for (a tally of the same two players, colours and score)."""


@dataclass(frozen=True, slots=True)
class PlayerRating:
    """One line of a rating table."""

    name: str
    """The player's name as it appears in the games."""
    rating: float | None
    """Rating in the table's scale; ``None`` for a player with no game."""
    margin: float | None
    """Half-width of the 95% interval of ``rating`` (0 for the anchor); ``None`` with no game."""
    games: int
    """Games played."""
    points: float
    """Points scored (a draw is half a point)."""
    draws: int
    """Games drawn."""
    pool: int
    """Index of the player's pool of connected players: 0 is the anchor's pool, else the largest; ratings of
    different pools are not comparable. -1 for a player with no game."""
    regularized: bool
    """True when the player's pool has no finite maximum-likelihood fit (a 100% or 0% score, or a group that beat
    everyone outside it) and was fitted with virtual draws between the groups: the rating depends on that
    prior."""
    los_next: float | None
    """Likelihood of superiority over the next player in the ranking (same pool); ``None`` for the last one."""

    @property
    def score(self) -> float | None:
        """Fraction of the possible points scored, or ``None`` with no game."""
        return self.points / self.games if self.games else None

    @property
    def draw_rate(self) -> float | None:
        """Fraction of games drawn, or ``None`` with no game."""
        return self.draws / self.games if self.games else None


class PairRecord(NamedTuple):
    """What one player did against one opponent, both colours together (a named tuple: a large crosstable is
    built fast)."""

    player: str
    """The player whose points are counted."""
    opponent: str
    """The opponent."""
    games: int
    """Games between the two."""
    points: float
    """``player``'s points in those games."""
    draws: int
    """Drawn games between the two."""


@dataclass(frozen=True, slots=True)
class RatingTable:
    """The result of :func:`rate`."""

    players: tuple[PlayerRating, ...]
    """Rated players, best first within each pool, pools in order; players with no game last."""
    pairs: tuple[PairRecord, ...]
    """The crosstable: one record per ordered pair of players who met (both ``a``-``b`` and ``b``-``a``)."""
    scale: float
    """Points per factor of ten in the odds (400 for logistic Elo)."""
    anchor: tuple[str, float] | None
    """The player whose rating was fixed, and that rating; ``None`` when each pool averages 0."""
    first_player_advantage: float | None
    """The fitted bonus for White in rating points (pool 0), or ``None`` when it was not fitted."""
    first_player_advantage_margin: float | None
    """Half-width of the 95% interval of ``first_player_advantage``."""
    covariance: Mapping[tuple[str, str], float]
    """Covariance of the ratings of two players of the same pool (both orders present), for :meth:`los`: every pair
    in a pool of up to :data:`EXACT_PLAYERS`, the pairs who met (and each player with itself) in a larger one."""

    def player(self, name: str) -> PlayerRating:
        """The line of the player called ``name``; raises :class:`KeyError` when there is none."""
        for p in self.players:
            if p.name == name:
                return p
        raise KeyError(name)

    def los(self, a: str, b: str) -> float | None:
        """Likelihood that ``a`` is stronger than ``b``; ``None`` when they are in different pools or unrated."""
        pa, pb = self.player(a), self.player(b)
        if pa.rating is None or pb.rating is None or pa.pool != pb.pool or a == b:
            return None
        variance = self.covariance[(a, a)] + self.covariance[(b, b)] - 2.0 * self.covariance.get((a, b), 0.0)
        if variance <= 0.0:
            return None
        return normal_cdf((pa.rating - pb.rating) / math.sqrt(variance))


@dataclass(slots=True)
class _Tally:
    """Games of one ordered pair (white, black); mutable only while the games are being counted."""

    games: int = 0
    points: float = 0.0
    draws: int = 0


@dataclass(frozen=True, slots=True)
class _Counts:
    """Every game counted: per ordered pair of player numbers, and per player (numbered by first appearance)."""

    names: list[str]
    tallies: dict[tuple[int, int], _Tally]
    played: list[int]
    points: list[float]
    draws: list[int]


@dataclass(frozen=True, slots=True)
class _Ratings:
    """The fit of every pool, per player number (``None`` for a player with no game)."""

    ratings: list[float | None]
    margins: list[float | None]
    regularized: list[bool]
    pool_of: list[int]
    covariance: dict[tuple[str, str], float]
    advantage: float | None
    advantage_margin: float | None


def rate(
    games: Iterable[ScoredGame],
    *,
    anchor: tuple[str, float] | None = None,
    players: Iterable[str] = (),
    first_player_advantage: bool = False,
    scale: float = ELO_SCALE,
) -> RatingTable:
    """Maximum-likelihood ratings of everyone in ``games`` (see the module documentation for the model).

    ``anchor`` fixes one player's rating (``("Greedy", 1000.0)``); without it each pool averages 0. ``players``
    adds names that should be listed even with no game. ``first_player_advantage`` also fits a bonus for White.
    ``scale`` is the number of rating points per factor of ten in the odds: 400 is the logistic Elo scale (Ordo's
    ``-z 200.24094``); Ordo's default, 202 points for 76%, is ``202 / log10(0.76 / 0.24)``.
    """
    if not scale > 0.0:
        raise RatingError(f"the rating scale must be positive, not {scale}")
    counts = _count(games, players)
    anchor_index: int | None = None
    if anchor is not None:
        if anchor[0] not in counts.names:
            known = ", ".join(sorted(counts.names)) or "none"
            raise RatingError(f"anchor {anchor[0]!r} is not one of the players: {known}")
        anchor_index = counts.names.index(anchor[0])
        if not counts.played[anchor_index]:
            raise RatingError(f"anchor {anchor[0]!r} has no game, so it cannot fix anyone's rating")
    fit = _fit_pools(counts, anchor_index, None if anchor is None else anchor[1], first_player_advantage, scale)
    return RatingTable(
        players=_ranked_lines(counts, fit),
        pairs=_pair_records(counts),
        scale=scale,
        anchor=anchor,
        first_player_advantage=fit.advantage,
        first_player_advantage_margin=fit.advantage_margin,
        covariance=fit.covariance,
    )


def _count(games: Iterable[ScoredGame], players: Iterable[str]) -> _Counts:
    """Checks and counts the games; ``players`` adds names with no game."""
    names: dict[str, int] = {}
    tallies: dict[tuple[int, int], _Tally] = {}
    for number, game in enumerate(games, start=1):
        if number > MAX_GAMES:
            raise RatingError(f"more than {MAX_GAMES:,} games: rate at most that many at once")
        if game.score not in _VALID_SCORES:
            raise RatingError(f"score {game.score!r} of {game.white} v {game.black} is not 0, 0.5 or 1")
        if game.white == game.black:
            raise RatingError(f"{game.white} played itself: a game needs two different players")
        if not (isinstance(game.count, int) and game.count >= 1):
            raise RatingError(f"{game.white} v {game.black}: a count of {game.count!r} games")
        i = names.setdefault(game.white, len(names))
        j = names.setdefault(game.black, len(names))
        if len(names) > MAX_PLAYERS:
            raise RatingError(f"more than {MAX_PLAYERS:,} players: rate at most that many at once")
        tally = tallies.get((i, j))
        if tally is None:
            tally = tallies[(i, j)] = _Tally()
        tally.games += game.count
        tally.points += game.score * game.count
        tally.draws += (game.score == 0.5) * game.count
    for name in players:
        names.setdefault(name, len(names))
    n = len(names)
    played = [0] * n
    points = [0.0] * n
    draws = [0] * n
    for (i, j), t in tallies.items():
        played[i] += t.games
        played[j] += t.games
        points[i] += t.points
        points[j] += t.games - t.points
        draws[i] += t.draws
        draws[j] += t.draws
    return _Counts(list(names), tallies, played, points, draws)


def _fit_pools(
    counts: _Counts, anchor: int | None, anchor_rating: float | None, fit_advantage: bool, scale: float
) -> _Ratings:
    """Fits each pool of connected players on its own; the anchor's pool holds the anchor at ``anchor_rating``."""
    n = len(counts.names)
    ratings: list[float | None] = [None] * n
    margins: list[float | None] = [None] * n
    regularized = [False] * n
    pool_of = [-1] * n
    covariance: dict[tuple[str, str], float] = {}
    advantage: float | None = None
    advantage_margin: float | None = None
    for pool_index, members in enumerate(_pools(n, counts.tallies, counts.played, anchor)):
        for i in members:
            pool_of[i] = pool_index
        pool_tallies = {key: t for key, t in counts.tallies.items() if pool_of[key[0]] == pool_index}
        pinned: float | None = None
        if anchor is not None and anchor in members:
            # The fit holds its first member at 0: make that the anchor, so that its margin is 0.
            members.remove(anchor)
            members.insert(0, anchor)
            pinned = anchor_rating
        fit = _fit_pool(members, pool_tallies, pinned, fit_advantage, scale)
        for k, i in enumerate(members):
            ratings[i] = fit.ratings[k]
            margins[i] = Z95 * math.sqrt(max(fit.variances[k], 0.0))
            regularized[i] = fit.regularized
            covariance[(counts.names[i], counts.names[i])] = fit.variances[k]
        for (a, b), value in fit.covariances.items():
            covariance[(counts.names[members[a]], counts.names[members[b]])] = value
        if pool_index == 0 and fit.advantage is not None:
            advantage = fit.advantage
            advantage_margin = Z95 * math.sqrt(max(fit.advantage_variance, 0.0))
    return _Ratings(ratings, margins, regularized, pool_of, covariance, advantage, advantage_margin)


def _ranked_lines(counts: _Counts, fit: _Ratings) -> tuple[PlayerRating, ...]:
    """The table's lines: rated players best first within each pool, pools in order, then players with no game."""
    names, ratings, pool_of = counts.names, fit.ratings, fit.pool_of
    n = len(names)
    rated = sorted(
        (i for i in range(n) if counts.played[i]), key=lambda i: (pool_of[i], -(ratings[i] or 0.0), names[i])
    )
    unrated = sorted((i for i in range(n) if not counts.played[i]), key=lambda i: names[i])
    lines: list[PlayerRating] = []
    for position, i in enumerate(rated):
        los_next: float | None = None
        if position + 1 < len(rated) and pool_of[rated[position + 1]] == pool_of[i]:
            j = rated[position + 1]
            a, b = names[i], names[j]
            variance = fit.covariance[(a, a)] + fit.covariance[(b, b)] - 2.0 * fit.covariance.get((a, b), 0.0)
            ri, rj = ratings[i], ratings[j]
            if variance > 0.0 and ri is not None and rj is not None:
                los_next = normal_cdf((ri - rj) / math.sqrt(variance))
        lines.append(
            PlayerRating(
                name=names[i],
                rating=ratings[i],
                margin=fit.margins[i],
                games=counts.played[i],
                points=counts.points[i],
                draws=counts.draws[i],
                pool=pool_of[i],
                regularized=fit.regularized[i],
                los_next=los_next,
            )
        )
    lines.extend(PlayerRating(names[i], None, None, 0, 0.0, 0, -1, False, None) for i in unrated)
    return tuple(lines)


def _pair_records(counts: _Counts) -> tuple[PairRecord, ...]:
    """The crosstable: both colours together, one record per ordered pair who met, sorted by names."""
    totals: dict[tuple[int, int], list[float]] = {}
    for (i, j), t in counts.tallies.items():
        forward = totals.setdefault((i, j), [0.0, 0.0, 0.0])
        backward = totals.setdefault((j, i), [0.0, 0.0, 0.0])
        forward[0] += t.games
        forward[1] += t.points
        forward[2] += t.draws
        backward[0] += t.games
        backward[1] += t.games - t.points
        backward[2] += t.draws
    names = counts.names
    rank = [0] * len(names)
    for position, i in enumerate(sorted(range(len(names)), key=names.__getitem__)):
        rank[i] = position
    n = len(names)
    return tuple(
        PairRecord(names[i], names[j], int(g), p, int(d))
        for (i, j), (g, p, d) in sorted(totals.items(), key=lambda kv: rank[kv[0][0]] * n + rank[kv[0][1]])
    )


def _pools(
    n: int, tallies: Mapping[tuple[int, int], _Tally], played: Sequence[int], anchor: int | None
) -> list[list[int]]:
    """Connected groups of players who played (union-find); the anchor's pool first, then the largest."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in tallies:
        parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        if played[i]:
            groups.setdefault(root(i), []).append(i)
    anchor_root = None if anchor is None else root(anchor)
    return sorted(groups.values(), key=lambda g: (root(g[0]) != anchor_root, -len(g), g[0]))


@dataclass(frozen=True, slots=True)
class _PoolFit:
    """Ratings and covariance of one pool, in the order of its members."""

    ratings: list[float]
    variances: list[float]
    covariances: dict[tuple[int, int], float]
    """Between members (both orders): all of them up to :data:`EXACT_PLAYERS`, those who met beyond."""
    advantage: float | None
    advantage_variance: float
    regularized: bool


def _fit_pool(
    members: Sequence[int],
    tallies: Mapping[tuple[int, int], _Tally],
    anchor_rating: float | None,
    fit_advantage: bool,
    scale: float,
) -> _PoolFit:
    """Fits one pool exactly, or with virtual draws when the exact maximum is not finite."""
    local = {player: k for k, player in enumerate(members)}
    pairs: list[tuple[int, int, float, float]] = [
        (local[i], local[j], t.games, t.points) for (i, j), t in tallies.items()
    ]
    m = len(members)
    met = sorted({(min(i, j), max(i, j)) for i, j, _, _ in pairs})
    group = _dominance_groups(m, pairs)
    # Pairs across groups are exactly the one-sided results that push groups infinitely apart; a draw on each
    # joins the groups while leaving the results inside a group alone.
    needs_prior = [(i, j) for i, j in met if group[i] != group[j]]
    if not needs_prior and fit_advantage and not _advantage_bounded(pairs):
        needs_prior = met
    solution = None if needs_prior else _newton(m, pairs, fit_advantage, scale)
    regularized = solution is None
    if solution is None:
        # A virtual draw is split over both colours so that it says nothing about the first-player advantage.
        prior = [(i, j, 0.5, 0.25) for i, j in needs_prior or met] + [(j, i, 0.5, 0.25) for i, j in needs_prior or met]
        pairs = pairs + prior
        solution = _newton(m, pairs, fit_advantage, scale)
        if solution is None:
            raise AssertionError("the rating fit with virtual draws is strictly concave and must converge")
    params = solution
    # The fit holds member 0 at 0; move to the anchor or to the pool average 0.
    shift = anchor_rating if anchor_rating is not None else -sum(params[:m]) / m
    ratings = [params[k] + shift for k in range(m)]
    advantage = params[m] if fit_advantage else None
    diagonal, off = _information(m, pairs, params, fit_advantage, scale)
    if m <= EXACT_PLAYERS:
        cov = _exact_covariance(len(diagonal), diagonal, off)
        if anchor_rating is None:
            cov = _centre(cov, m)
        variances = [cov[a][a] for a in range(m)]
        covariances = {(a, b): cov[a][b] for a in range(m) for b in range(m) if a != b}
        advantage_variance = cov[m][m] if fit_advantage else 0.0
    else:
        variances, covariances = _approximate_covariance(m, diagonal, off, anchored=anchor_rating is not None)
        advantage_variance = 1.0 / diagonal[m] if fit_advantage and diagonal[m] > 0.0 else 0.0
    return _PoolFit(ratings, variances, covariances, advantage, advantage_variance, regularized)


def _approximate_covariance(
    m: int, diagonal: Sequence[float], off: Mapping[tuple[int, int], float], *, anchored: bool
) -> tuple[list[float], dict[tuple[int, int], float]]:
    """The covariance of a large pool's ratings in O(pairs): the information is a weighted graph Laplacian
    ``D - W``, whose pseudo-inverse is ``D^-1 + D^-1 W D^-1 + D^-1 W D^-1 W D^-1 + ...``; the first terms give each
    variance (``1/d_i + sum_j w_ij^2 / (d_i^2 d_j)``) and the covariance of two players who met (``w_ij/(d_i d_j)``).
    Close to exact in a well-mixed pool (a round robin of 1,000: within 0.1%); an underestimate where players meet
    only a few neighbours (a chain). With an anchor (member 0) everything is taken relative to it."""
    d = [diagonal[a] if diagonal[a] > 0.0 else 1e-300 for a in range(m)]
    variances = [1.0 / d[a] for a in range(m)]
    covariances: dict[tuple[int, int], float] = {}
    for (a, b), value in off.items():
        if a < m and b < m:
            w = -value
            variances[a] += w * w / (d[a] * d[a] * d[b])
            covariances[(a, b)] = w / (d[a] * d[b])
    if anchored:
        v0 = variances[0]
        c0 = [covariances.get((a, 0), 0.0) for a in range(m)]
        variances = [variances[a] + v0 - 2.0 * c0[a] for a in range(m)]
        covariances = {(a, b): c - c0[a] - c0[b] + v0 for (a, b), c in covariances.items()}
        variances[0] = 0.0
        covariances = {key: (0.0 if 0 in key else c) for key, c in covariances.items()}
    return variances, covariances


def _dominance_groups(m: int, pairs: Sequence[tuple[int, int, float, float]]) -> list[int]:
    """Strongly connected components of the graph "took points from" (Kosaraju), as a group label per player.

    The maximum-likelihood ratings are finite exactly when there is one group (Zermelo, Ford).
    """
    took_from: list[list[int]] = [[] for _ in range(m)]
    gave_to: list[list[int]] = [[] for _ in range(m)]
    for i, j, g, p in pairs:
        if p > 0.0:
            took_from[i].append(j)
            gave_to[j].append(i)
        if g - p > 0.0:
            took_from[j].append(i)
            gave_to[i].append(j)
    finished: list[int] = []
    visited = [False] * m
    for start in range(m):
        if visited[start]:
            continue
        visited[start] = True
        stack = [(start, iter(took_from[start]))]
        while stack:
            node, edges = stack[-1]
            for nxt in edges:
                if not visited[nxt]:
                    visited[nxt] = True
                    stack.append((nxt, iter(took_from[nxt])))
                    break
            else:
                stack.pop()
                finished.append(node)
    label = [-1] * m
    for count, start in enumerate(reversed(finished)):
        if label[start] != -1:
            continue
        label[start] = count
        todo = [start]
        while todo:
            for nxt in gave_to[todo.pop()]:
                if label[nxt] == -1:
                    label[nxt] = count
                    todo.append(nxt)
    return label


def _advantage_bounded(pairs: Sequence[tuple[int, int, float, float]]) -> bool:
    """False when White won every game or lost every game: the first-player bonus would be infinite."""
    total = sum(g for _, _, g, _ in pairs)
    white_points = sum(p for _, _, _, p in pairs)
    return 0.0 < white_points < total


def _newton(
    m: int, pairs: Sequence[tuple[int, int, float, float]], fit_advantage: bool, scale: float
) -> list[float] | None:
    """Maximizes the log-likelihood with member 0 held at 0: Newton's method whose steps are solved by conjugate
    gradients on the information matrix, which is applied row by row from each player's opponents and never formed.
    Every pass over the pairs costs O(pairs), and pairs are at most the games: the whole fit costs O(games x passes).

    Returns all parameters (m ratings, then the advantage when fitted), or ``None`` when the iteration does not
    converge.
    """
    k = math.log(10.0) / scale
    size = m + (1 if fit_advantage else 0)
    params = [0.0] * size
    whites = [i for i, _, _, _ in pairs]
    blacks = [j for _, j, _, _ in pairs]
    counts = [g for _, _, g, _ in pairs]
    scores = [p for _, _, _, p in pairs]
    # Each player's opponents, and the pair of each: the rows of the information matrix.
    opponents: list[list[int]] = [[] for _ in range(m)]
    row_pairs: list[list[int]] = [[] for _ in range(m)]
    as_white: list[list[int]] = [[] for _ in range(m)]
    as_black: list[list[int]] = [[] for _ in range(m)]
    for n, (i, j) in enumerate(zip(whites, blacks, strict=True)):
        opponents[i].append(j)
        row_pairs[i].append(n)
        opponents[j].append(i)
        row_pairs[j].append(n)
        as_white[i].append(n)
        as_black[j].append(n)

    def predictions(values: Sequence[float]) -> list[float]:
        bonus = values[m] if fit_advantage else 0.0
        return [k * (values[i] - values[j] + bonus) for i, j in zip(whites, blacks, strict=True)]

    exp, log1p = math.exp, math.log1p

    def log_likelihood(xs: Sequence[float]) -> float:
        # -(p * softplus(-x) + (g - p) * softplus(x)), with softplus(-x) = softplus(x) - x (softplus inlined)
        return sum(
            p * x - g * ((x if x > 0.0 else 0.0) + log1p(exp(-x if x > 0.0 else x)))
            for x, g, p in zip(xs, counts, scores, strict=True)
        )

    # Start from each player's own score against the field: most of the way in a well-mixed pool.
    played = [0.5 + sum(map(counts.__getitem__, row)) for row in row_pairs]
    points = [
        0.25 + sum(map(scores.__getitem__, as_white[a])) + sum(counts[n] - scores[n] for n in as_black[a])
        for a in range(m)
    ]
    start = [math.log(w / (g - w)) / k for w, g in zip(points, played, strict=True)]
    params[:m] = [r - start[0] for r in start]
    xs = predictions(params)
    current = log_likelihood(xs)
    for _ in range(_NEWTON_MAX_ITERATIONS):
        expected = [1.0 / (1.0 + exp(-x)) if x > -700.0 else 0.0 for x in xs]
        slopes = [k * (p - g * e) for p, g, e in zip(scores, counts, expected, strict=True)]
        curvature = [k * k * g * e * (1.0 - e) for g, e in zip(counts, expected, strict=True)]
        gradient = [
            sum(map(slopes.__getitem__, as_white[a])) - sum(map(slopes.__getitem__, as_black[a])) for a in range(m)
        ]
        weights = [list(map(curvature.__getitem__, row)) for row in row_pairs]
        diagonal = [sum(row) for row in weights]
        coupling: list[float] = []
        if fit_advantage:
            gradient.append(sum(slopes))
            coupling = [
                sum(map(curvature.__getitem__, as_white[a])) - sum(map(curvature.__getitem__, as_black[a]))
                for a in range(m)
            ]
            diagonal.append(sum(curvature))
        gradient[0] = 0.0
        # How far the ratings still are from the maximum, about, in rating points; Newton converges quadratically
        # when each step is solved the more exactly the closer it is (Dembo-Eisenstat-Steihaug).
        distance = (
            max(abs(g) / d for g, d in zip(gradient[1:], diagonal[1:], strict=True) if d > 0.0) if size > 1 else 0.0
        )
        if distance < _NEWTON_TOLERANCE:
            return params

        def apply(
            v: Sequence[float],
            weights: list[list[float]] = weights,
            coupling: list[float] = coupling,
            diagonal: list[float] = diagonal,
        ) -> list[float]:
            get = v.__getitem__
            out = [diagonal[a] * v[a] - sum(map(operator.mul, weights[a], map(get, opponents[a]))) for a in range(m)]
            if fit_advantage:
                bonus = v[m]
                out = [o + c * bonus for o, c in zip(out, coupling, strict=True)]
                out.append(sum(map(operator.mul, coupling, v)) + diagonal[m] * bonus)
            out[0] = 0.0  # member 0 is held
            return out

        step = _conjugate_gradients(apply, gradient, diagonal, max(_CG_TOLERANCE, min(0.1, distance)))
        if step is None:
            return None
        # A player far out in the logistic's tail (one game, won against a much weaker field) has almost no
        # curvature: a full Newton step could throw it to thousands of points, where its curvature is nil and the
        # next step has no finite solution. Steps are held to _MAX_STEP factors of ten in the odds (the likelihood
        # still rises; near the maximum the steps are short and Newton's as ever).
        longest = max(map(abs, step[:m]))
        factor = min(1.0, _MAX_STEP * scale / longest) if longest > 0.0 else 1.0
        while True:
            trial = [a + factor * b for a, b in zip(params, step, strict=True)]
            xs = predictions(trial)
            value = log_likelihood(xs)
            if value >= current - 1e-12 * abs(current) or factor < 1e-6:
                break
            factor /= 2.0
        params, current = trial, value
    return None


def _conjugate_gradients(
    apply: Callable[[Sequence[float]], list[float]], b: Sequence[float], diagonal: Sequence[float], tolerance: float
) -> list[float] | None:
    """Solves ``A x = b`` to the relative residual ``tolerance`` for the symmetric positive definite ``A`` that
    ``apply`` multiplies by, with component 0 held at 0, preconditioned by ``A``'s diagonal; ``None`` when ``A`` is
    singular there."""
    n = len(b)
    if n <= 1:
        return [0.0] * n
    inverse = [0.0] + [1.0 / d if d > 1e-300 else 0.0 for d in diagonal[1:]]
    if any(d <= 1e-300 for d in diagonal[1:]):
        return None
    x = [0.0] * n
    r = list(b)
    z = [a * c for a, c in zip(inverse, r, strict=True)]
    d = list(z)
    rz = sum(a * c for a, c in zip(r, z, strict=True))
    target = (tolerance * max(abs(v) for v in b)) ** 2
    for _ in range(max(4 * n, 50)):
        if rz <= target * 1e-30 or max(abs(v) for v in r) ** 2 <= target:
            return x
        ad = apply(d)
        dad = sum(a * c for a, c in zip(d, ad, strict=True))
        if dad <= 0.0:
            return None
        alpha = rz / dad
        x = [a + alpha * c for a, c in zip(x, d, strict=True)]
        r = [a - alpha * c for a, c in zip(r, ad, strict=True)]
        z = [a * c for a, c in zip(inverse, r, strict=True)]
        rz_next = sum(a * c for a, c in zip(r, z, strict=True))
        d = [a + (rz_next / rz) * c for a, c in zip(z, d, strict=True)]
        rz = rz_next
    return x


def _information(
    m: int, pairs: Sequence[tuple[int, int, float, float]], params: Sequence[float], fit_advantage: bool, scale: float
) -> tuple[list[float], dict[tuple[int, int], float]]:
    """The information matrix at ``params`` in sparse form: its diagonal, and its off-diagonal entries (both
    orders) between players who met and between each player and the advantage."""
    k = math.log(10.0) / scale
    size = m + (1 if fit_advantage else 0)
    bonus = params[m] if fit_advantage else 0.0
    diagonal = [0.0] * size
    off: dict[tuple[int, int], float] = {}
    for i, j, g, _ in pairs:
        e = _logistic(k * (params[i] - params[j] + bonus))
        c = k * k * g * e * (1.0 - e)
        diagonal[i] += c
        diagonal[j] += c
        off[(i, j)] = off.get((i, j), 0.0) - c
        off[(j, i)] = off.get((j, i), 0.0) - c
        if fit_advantage:
            diagonal[m] += c
            off[(i, m)] = off.get((i, m), 0.0) + c
            off[(m, i)] = off.get((m, i), 0.0) + c
            off[(j, m)] = off.get((j, m), 0.0) - c
            off[(m, j)] = off.get((m, j), 0.0) - c
    return diagonal, off


def _exact_covariance(size: int, diagonal: Sequence[float], off: Mapping[tuple[int, int], float]) -> list[list[float]]:
    """The inverse of the information with parameter 0 held (a zero row and column for it): O(size^3)."""
    matrix = [[diagonal[a] if a == b else off.get((a, b), 0.0) for b in range(1, size)] for a in range(1, size)]
    reduced = _cholesky_inverse(matrix)
    if reduced is None:  # not positive definite (a degenerate pool): the general inverse decides
        reduced = _inverse(matrix)
    covariance = [[0.0] * size for _ in range(size)]
    if reduced is None:
        return covariance
    for r in range(size - 1):
        for c in range(size - 1):
            covariance[r + 1][c + 1] = reduced[r][c]
    return covariance


def _centre(cov: Sequence[Sequence[float]], m: int) -> list[list[float]]:
    """Covariance after subtracting the mean of the first ``m`` parameters from each of them."""
    size = len(cov)
    col_mean = [sum(cov[a][b] for a in range(m)) / m for b in range(size)]
    grand = sum(col_mean[:m]) / m
    out = [[0.0] * size for _ in range(size)]
    for a in range(size):
        for b in range(size):
            value = cov[a][b]
            if a < m:
                value -= col_mean[b]
            if b < m:
                value -= col_mean[a]
            if a < m and b < m:
                value += grand
            out[a][b] = value
    return out


def _cholesky_inverse(matrix: Sequence[Sequence[float]]) -> list[list[float]] | None:
    """The inverse of a symmetric positive definite matrix by its Cholesky factor ``L`` (``A^-1 = L^-T L^-1``), in
    about a third of Gauss-Jordan's operations, each inner product one ``sum(map(mul))`` in C; ``None`` when the
    matrix is not (numerically) positive definite."""
    n = len(matrix)
    mul, sqrt = operator.mul, math.sqrt
    # L row by row (only its first i + 1 entries matter in row i).
    lower: list[list[float]] = []
    for i in range(n):
        row_a = matrix[i]
        row = [0.0] * (i + 1)
        for j in range(i):
            lj = lower[j]
            row[j] = (row_a[j] - sum(map(mul, row[:j], lj[:j]))) / lj[j]
        pivot = row_a[i] - sum(map(mul, row[:i], row[:i]))
        if not pivot > 1e-300 * max(1.0, abs(row_a[i])):
            return None
        row[i] = sqrt(pivot)
        lower.append(row)
    # The columns of M = L^-1 (lower triangular): column j holds M[k][j] for k >= j, zeros above.
    columns: list[list[float]] = [[0.0] * n for _ in range(n)]
    for j in range(n):
        col = columns[j]
        col[j] = 1.0 / lower[j][j]
        for i in range(j + 1, n):
            li = lower[i]
            col[i] = -sum(map(mul, li[j:i], col[j:i])) / li[i]
    # A^-1[a][b] = sum_k M[k][a] M[k][b], over k >= max(a, b).
    out = [[0.0] * n for _ in range(n)]
    for a in range(n):
        ca, row_out = columns[a], out[a]
        for b in range(a + 1):
            value = sum(map(mul, ca[a:], columns[b][a:]))
            row_out[b] = value
            out[b][a] = value
    return out


def _inverse(matrix: Sequence[Sequence[float]]) -> list[list[float]] | None:
    """Gauss-Jordan inverse with partial pivoting; ``None`` when the matrix is singular."""
    n = len(matrix)
    work = [list(row) + [1.0 if r == c else 0.0 for c in range(n)] for r, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(work[r][col]))
        if abs(work[pivot][col]) < 1e-300:
            return None
        work[col], work[pivot] = work[pivot], work[col]
        inv = 1.0 / work[col][col]
        work[col] = [v * inv for v in work[col]]
        for r in range(n):
            if r != col and work[r][col] != 0.0:
                f = work[r][col]
                work[r] = [v - f * w for v, w in zip(work[r], work[col], strict=True)]
    return [row[n:] for row in work]


def _logistic(x: float) -> float:
    """1 / (1 + e^-x) without overflow."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _softplus(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))
