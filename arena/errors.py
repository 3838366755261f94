"""One exception root for quarto_arena: every error raised on purpose, its exit status, and its ``reason``.

protocol/ imports nothing from arena/, so the root, :class:`QuartoError`, and :class:`ExitStatus` (the README's
exit table) live in :mod:`quarto_arena.protocol.errors`; :class:`ArenaError` below extends it for the arena. Each
class stays in the module that raises it; this is the map. ``status`` is what a command exits with when the error
reaches the CLI's ``main()`` (one line on stderr: the message); ``reason`` is the word a boundary branches on (never
the message's text). Where a class shows two of either, the instance chooses (``RunError(..., engine=True)``,
``EngineError``'s termination). tests/test_errors.py checks that this tree is the classes' own, line for line::

    class                                    status  reason                               raised in
    QuartoError                              2       error                                protocol.errors
    ├── NotationError (ValueError)           2       notation                             protocol.notation
    ├── IllegalTurn (ValueError)             2       illegal_turn                         protocol.rules
    ├── UqiError (ValueError)                3       uqi                                  protocol.uqi
    ├── ConnectError (ValueError)            3       connect                              protocol.connect
    ├── ClientError (ValueError)             2       connect_option                       protocol.client
    ├── ArenaRefused                         3       refused                              protocol.client
    ├── UnsupportedVariant                   3       unsupported_variant                  protocol.sdk
    ├── EndpointError (ValueError)           2       endpoint, not_loopback, cannot_bind  protocol.endpoint
    ├── UnknownEngine (KeyError)             2       unknown_engine                       engines.registry
    └── ArenaError                           2       error                                arena.errors
        ├── EngineError                      3       engine_error, a Termination's name   arena.engine
        │   └── EngineTerminated             3       disconnect                           arena.engine
        ├── TransportError                   3       transport                            arena.transport.base
        │   ├── PeerGone                     3       peer_gone                            arena.transport.base
        │   └── BadLine                      3       bad_line                             arena.transport.base
        ├── CannotStart                      3       cannot_start                         arena.compliance.checker
        ├── RunError                         2, 3    run                                  arena.run.spec
        │   └── ClusterError                 3, 2    cluster                              arena.cluster.connection
        ├── ArenaFault                       5       arena_fault                          arena.errors
        ├── JournalError                     2       journal                              arena.journal
        ├── RosterError (ValueError)         2       roster                               arena.roster
        ├── ScheduleError (ValueError)       2       schedule                             arena.schedule
        ├── PgnError                         2       pgn                                  arena.pgn
        ├── AnalysisError (ValueError)       2       analysis                             arena.analysis
        ├── StatsError (ValueError)          2       stats                                arena.stats.match
        ├── RatingError (ValueError)         2       rating                               arena.stats.rating
        ├── KeysError                        2       keys                                 arena.server.keys
        ├── ServerError                      2       cannot_bind                          arena.server.server
        ├── LadderError                      2       ladder                               arena.ladder.service
        ├── LadderDBError                    2       ladder_db                            arena.ladder.db
        ├── WebError                         2       web                                  arena.web
        ├── TuneError                        2       tune                                 arena.tune.spec
        └── BoardError                       2       board                                arena.board

A second base in brackets is kept for the callers that catch it (``except ValueError``). Outside the tree, on
purpose: signals that never leave the loop that raises them (compliance's ``StepFailed`` and ``StepSkipped``, the
engine's ``SearchFailed``, the solver's private ``_Abort``), which are verdicts, not errors.

A new error: derive it from :class:`ArenaError` (or the nearest class above), set ``status`` and ``reason`` on the
class, and add its line here.
"""

from __future__ import annotations

import errno
from typing import Final

from quarto_arena.protocol.errors import ExitStatus, QuartoError

__all__ = ["RESOURCE_ERRNOS", "ArenaError", "ArenaFault", "ExitStatus", "QuartoError", "arena_fault"]


class ArenaError(QuartoError):
    """The root of the arena's errors (protocol's and the engines' derive from :class:`QuartoError` directly)."""

    status = ExitStatus.USAGE
    reason = "error"


RESOURCE_ERRNOS: Final = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC, errno.EDQUOT, errno.ENOBUFS, errno.EAGAIN}
)
"""What an OSError of the arena's own call says when the arena, not an engine, is short of something: open files
(its own or the system's), memory, disk space, buffers, processes (``fork`` says EAGAIN)."""


class ArenaFault(ArenaError):
    """The arena itself failed (out of open files, memory or disk space): no engine is to blame, so the game in
    flight is aborted, never scored, and the run stops; ``--resume DIR`` plays that game again."""

    status = ExitStatus.RESOURCES
    reason = "arena_fault"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.record: object | None = None
        """The game it interrupted as far as it went (a ``GameRecord``, termination ``aborted``), if there was one."""


def arena_fault(error: OSError) -> bool:
    """True when ``error`` (raised by one of the arena's own calls) is the arena running short, not a peer's doing."""
    return error.errno in RESOURCE_ERRNOS
