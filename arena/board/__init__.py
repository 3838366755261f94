"""quarto_arena.arena.board: the analysis board, a page in the browser where a person plays engines, sets up and
analyses positions with the solver, asks engines for their turn, and opens games (``quarto-arena board``).

- :mod:`.human`: the person at the board as an engine session's transport, so that a game against a person is
  refereed by :func:`~quarto_arena.arena.referee.play_game` exactly as a run's games are (clocks, checks, forfeits);
- :mod:`.table`: the one game the board plays at a time, saved as PGN and JSON Lines when it ends;
- :mod:`.engines`: the engines loaded with ``--engine``, asked for their turn and ``info`` lines on a position;
- :mod:`.solving`: the solver's value of every legal turn, on worker threads, progressive and cancellable;
- :mod:`.games`: games opened from a PGN file, a run directory, or a link from another page, replayed by the rules;
- :mod:`.discovery`: where a running board tells the other pages its address (their "open on the board" links);
- :mod:`.server`: the page and its API (needs the ``web`` extra), POST requests guarded by a per-board token.

Nothing here prints; the CLI (``arena/cli/board.py``) decides what the user sees.
"""

from __future__ import annotations

from ..errors import ArenaError, ExitStatus

__all__ = ["BoardError"]


class BoardError(ArenaError):
    """A request the board cannot carry out (a bad position string, an illegal turn, a busy engine, a file that
    holds no game): one line naming the problem, shown on the page (or, at start-up, by the CLI)."""

    status = ExitStatus.USAGE
    reason = "board"
