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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ..errors import ArenaError, ExitStatus
from .elo import ELO_SCALE, Z95, normal_cdf

__all__ = ["PairRecord", "PlayerRating", "RatingError", "RatingTable", "ScoredGame", "rate"]

# Newton's method on the rating likelihood: stop when no rating moves by more than this many points.
_NEWTON_TOLERANCE: Final = 1e-10
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


@dataclass(frozen=True, slots=True)
class PairRecord:
    """What one player did against one opponent, both colours together."""

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
    """Covariance of the ratings of two players of the same pool (both orders present), for :meth:`los`."""

    def player(self, name: str) -> PlayerRating:
        """The line of the player called ``name``; raises :class:`KeyError` when there is none."""
        for p in self.players:
            if p.name == name:
                return p
        raise KeyError(name)

    def los(self, a: str, b: str) -> float | None:
        """Likelihood that ``a`` is stronger than ``b``; ``None`` when they are in different pools or unrated."""
        pa, pb = self.player(a), self.player(b)
        if pa.rating is None or pb.rating is None or (a, b) not in self.covariance:
            return None
        variance = self.covariance[(a, a)] + self.covariance[(b, b)] - 2.0 * self.covariance[(a, b)]
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
    for game in games:
        if game.score not in _VALID_SCORES:
            raise RatingError(f"score {game.score!r} of {game.white} v {game.black} is not 0, 0.5 or 1")
        if game.white == game.black:
            raise RatingError(f"{game.white} played itself: a game needs two different players")
        i = names.setdefault(game.white, len(names))
        j = names.setdefault(game.black, len(names))
        tally = tallies.get((i, j))
        if tally is None:
            tally = tallies[(i, j)] = _Tally()
        tally.games += 1
        tally.points += game.score
        tally.draws += game.score == 0.5
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
            margins[i] = Z95 * math.sqrt(max(fit.covariance[k][k], 0.0))
            regularized[i] = fit.regularized
            for m, j in enumerate(members):
                covariance[(counts.names[i], counts.names[j])] = fit.covariance[k][m]
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
            variance = fit.covariance[(a, a)] + fit.covariance[(b, b)] - 2.0 * fit.covariance[(a, b)]
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
    return tuple(
        PairRecord(names[i], names[j], int(g), p, int(d))
        for (i, j), (g, p, d) in sorted(totals.items(), key=lambda kv: (names[kv[0][0]], names[kv[0][1]]))
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
    covariance: list[list[float]]
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
    pairs = [(local[i], local[j], t.games, t.points) for (i, j), t in tallies.items()]
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
        solution = _newton(m, pairs + prior, fit_advantage, scale)
        if solution is None:
            raise AssertionError("the rating fit with virtual draws is strictly concave and must converge")
    params, cov = solution
    # The fit holds member 0 at 0; move to the anchor or to the pool average 0.
    if anchor_rating is not None:
        shift = anchor_rating
    else:
        shift = -sum(params[:m]) / m
        cov = _centre(cov, m)
    ratings = [params[k] + shift for k in range(m)]
    advantage = params[m] if fit_advantage else None
    advantage_variance = cov[m][m] if fit_advantage else 0.0
    return _PoolFit(ratings, [row[:m] for row in cov[:m]], advantage, advantage_variance, regularized)


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
) -> tuple[list[float], list[list[float]]] | None:
    """Maximizes the log-likelihood with member 0 held at 0.

    Returns all parameters (m ratings, then the advantage when fitted) and their covariance (zero row and column
    for member 0), or ``None`` when the iteration does not converge.
    """
    k = math.log(10.0) / scale
    size = m + (1 if fit_advantage else 0)
    params = [0.0] * size

    def predict(i: int, j: int, values: Sequence[float]) -> float:
        return values[i] - values[j] + (values[m] if fit_advantage else 0.0)

    def log_likelihood(values: Sequence[float]) -> float:
        total = 0.0
        for i, j, g, p in pairs:
            x = k * predict(i, j, values)
            total -= p * _softplus(-x) + (g - p) * _softplus(x)
        return total

    current = log_likelihood(params)
    for _ in range(_NEWTON_MAX_ITERATIONS):
        gradient = [0.0] * size
        information = [[0.0] * size for _ in range(size)]
        for i, j, g, p in pairs:
            e = _logistic(k * predict(i, j, params))
            slope = k * (p - g * e)
            curvature = k * k * g * e * (1.0 - e)
            # d(prediction)/d(param) is +1 for i (and the advantage), -1 for j.
            signs = [(i, 1.0), (j, -1.0)] + ([(m, 1.0)] if fit_advantage else [])
            for a, sa in signs:
                gradient[a] += sa * slope
                for b, sb in signs:
                    information[a][b] += sa * sb * curvature
        free = list(range(1, size))
        reduced = _inverse([[information[a][b] for b in free] for a in free])
        if reduced is None:
            return None
        step = [sum(reduced[r][c] * gradient[free[c]] for c in range(len(free))) for r in range(len(free))]
        factor = 1.0
        while True:
            trial = params[:]
            for r, a in enumerate(free):
                trial[a] += factor * step[r]
            value = log_likelihood(trial)
            if value >= current - 1e-12 * abs(current) or factor < 1e-6:
                break
            factor /= 2.0
        params, current = trial, value
        if max((abs(factor * s) for s in step), default=0.0) < _NEWTON_TOLERANCE:
            covariance = [[0.0] * size for _ in range(size)]
            for r, a in enumerate(free):
                for c, b in enumerate(free):
                    covariance[a][b] = reduced[r][c]
            return params, covariance
    return None


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
