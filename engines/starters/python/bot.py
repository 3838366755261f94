"""A Quarto bot on the quarto-arena SDK, written by ``quarto-arena new-bot python``: a starting point.

    python bot.py                                    # speaks UQI on standard input and output
    python bot.py --listen tcp://127.0.0.1:5555      # or serves it on a ZeroMQ endpoint

The SDK (``quarto_arena.protocol.bot``) does all of UQI: the handshake, typed options, ``newgame``, rebuilding
the position from every ``position`` command, ``go`` limits turned into a time budget, ``isready`` and ``stop``
during a search (the search runs in a worker thread), one ``turn`` per ``go``, error lines, quitting. What is
left is the game: :meth:`MyBot.search` gets a :class:`Position` and answers a :class:`Turn`.

Play: alpha-beta over turns, deepening one turn at a time until the budget is spent; it finds every win within
its depth and never gives a piece that wins at once when a safe one exists. The option Depth caps the search (a
``go depth N`` replaces it).
"""

from __future__ import annotations

import math
import random
import time

from quarto_arena.protocol.bot import Bot, SearchContext, run
from quarto_arena.protocol.rules import Position, Turn, turn_of
from quarto_arena.protocol.uqi import OptionSpec, OptionType, Score

WIN = 1000


class Timeout(Exception):
    """The budget is spent: the depth being searched is abandoned."""


def winning_turn(position: Position) -> Turn | None:
    """A turn that wins at once, if there is one: the claim of a missed alignment, or a winning placement (called
    under strict claims, alone under automatic ones)."""
    if position.claimable:
        return turn_of(claim=True)
    if position.hand is not None:
        for square in position.winning_squares():
            return turn_of(place=square, call=position.variant.strict)
    return None


class MyBot(Bot):
    """Iterative deepening alpha-beta; the option Depth is its deepest search, in turns."""

    name = "My Python bot 0.1"
    author = "me"
    options = (OptionSpec("Depth", OptionType.SPIN, default="3", min=1, max=16),)

    def search(self, position: Position, ctx: SearchContext) -> Turn:
        """The best turn found within the depth, the time and the nodes (SPEC §4.5: ``ctx.limits``)."""
        win = winning_turn(position)
        if win is not None:
            ctx.info(depth=1, score=Score("win", 1), pv=[win])
            return win
        turns = position.legal_turns()  # none of them completes a group: there is no win
        random.shuffle(turns)  # equal turns differ from game to game
        depth_option = self.option("Depth")
        assert isinstance(depth_option, int)
        self.ctx, self.nodes = ctx, 0
        # Half the SDK's budget (which keeps a move overhead already): Python is slow to stop on a loaded machine.
        self.deadline = math.inf if ctx.budget is None else ctx.started + ctx.budget / 2
        for depth in range(2, (ctx.limits.depth or depth_option) + 1):
            try:
                scores = [self.after(position.apply(t), depth - 1, 1) for t in turns]
            except Timeout:
                break  # an unfinished depth is not trusted
            best = max(range(len(turns)), key=scores.__getitem__)
            turns.insert(0, turns.pop(best))  # the best turn first at the next depth
            value = scores[best]
            if abs(value) >= WIN - 100:  # proved: a win or a loss in N turns (SPEC §5.3)
                kind = "win" if value > 0 else "loss"
                ctx.info(depth=depth, score=Score(kind, WIN - abs(value) + 1), nodes=self.nodes, pv=[turns[0]])
                break
            ctx.info(depth=depth, score=Score("value", 0), nodes=self.nodes, pv=[turns[0]])
        return turns[0]

    def after(self, position: Position, depth: int, ply: int) -> int:
        """The score for the player who just moved into ``position``: the negation of the opponent's best."""
        return 0 if position.is_over else -self.negamax(position, depth, -WIN - 1, WIN + 1, ply)

    def negamax(self, position: Position, depth: int, alpha: int, beta: int, ply: int) -> int:
        """The score of ``position`` for the player to move, searching ``depth`` turns: WIN - ply for a win at
        ``ply``, 0 for a draw or beyond the depth."""
        if winning_turn(position) is not None:
            return WIN - ply
        if depth <= 1:
            return 0
        self.nodes += 1
        limit = self.ctx.limits.nodes
        if self.ctx.stopped or time.monotonic() > self.deadline or (limit is not None and self.nodes >= limit):
            raise Timeout
        best = -WIN - 1
        for turn in position.legal_turns():
            after = position.apply(turn)
            score = 0 if after.is_over else -self.negamax(after, depth - 1, -beta, -alpha, ply + 1)
            best = max(best, score)
            alpha = max(alpha, best)
            if alpha >= beta:
                break
        return best


if __name__ == "__main__":
    run(MyBot())
