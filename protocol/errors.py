"""The root of every error quarto_arena raises on purpose, and the exit statuses its commands end with.

protocol/ imports nothing from arena/, so the root lives here: :class:`QuartoError`, which the arena's root
(:class:`quarto_arena.arena.errors.ArenaError`) extends. The whole tree, protocol's and the arena's, is drawn in
:mod:`quarto_arena.arena.errors`.

Every error carries what a boundary needs to report it without reading its message: ``status``, the
:class:`ExitStatus` a command ends with when the error reaches it, and ``reason``, a short machine-readable word
(``not_loopback``, ``journal``...). A class sets both for all its instances; an instance may narrow them
(``raise EndpointError(..., reason="not_loopback")``).
"""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    """The README's exit table: what every command of ``quarto-arena`` (and a bot's command line) ends with."""

    OK = 0
    """Success; ``sprt``: H1 accepted; ``check``: the engine complies."""
    VERDICT = 1
    """A verdict against: ``sprt`` accepted H0; ``check`` found the engine non-compliant; ``ladder check`` found
    damage."""
    USAGE = 2
    """A usage error: a bad option, position, file, or a corrupt or foreign journal."""
    ENGINE = 3
    """An engine failure: it cannot start, refuses its options or the variant, or fails a game under --strict."""
    NO_DECISION = 4
    """``sprt``: no decision within ``--max-games``."""
    RESOURCES = 5
    """The arena itself ran out of a resource (open files, memory, disk space): the game in flight is aborted, not
    counted, and ``--resume DIR`` continues."""
    INTERNAL = 70
    """A bug in quarto-arena (EX_SOFTWARE)."""
    SIGNAL = 128
    """Stopped by signal N: the status is 128 + N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""


class QuartoError(Exception):
    """The root: an error quarto_arena raises on purpose, with a one-line message a user can act on."""

    status: ExitStatus = ExitStatus.USAGE
    """The exit status of a command this error ends."""
    reason: str = "error"
    """A short machine-readable word for what went wrong (a boundary branches on it, never on the message)."""

    def __init__(self, message: str = "", *, reason: str | None = None, status: ExitStatus | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        if status is not None:
            self.status = status
