"""quarto_arena.arena.run: the one game runner behind ``tournament``, ``play`` and ``sprt``.

- :mod:`.spec`: what defines a run (:class:`RunSpec`, :func:`build_spec`, :class:`RunError`);
- :mod:`.events`: what a run reports as it goes, and its :class:`RunOutcome`;
- :mod:`.sprt`: the SPRT's stopping rule;
- :mod:`.players`: where games are played (:class:`LocalPlayer` over an :class:`EnginePool`, or elsewhere);
- :mod:`.commit`: group commit into the journal;
- :mod:`.runner`: :class:`Run`, which plays a schedule, J games at once, and resumes.
"""

from ..options import RunOptions
from .events import (
    Event,
    GameEnded,
    GameFinished,
    GameStarted,
    Notice,
    RunOutcome,
    SprtProgress,
    SprtUpdate,
    TurnPlayed,
    Verdict,
)
from .players import EnginePool, EnginesOf, GamePlayer, LocalPlayer, game_spec
from .runner import (
    ABORTED_NAME,
    CONFIG_NAME,
    FAILURES_NAME,
    JSONL_NAME,
    PGN_NAME,
    RUN_FILES,
    Interrupt,
    Run,
    play_match,
    run_workers,
)
from .spec import RunError, RunKind, RunSpec, ServerSpec, build_spec, server_spec
from .sprt import SprtTracker

__all__ = [
    "ABORTED_NAME",
    "CONFIG_NAME",
    "FAILURES_NAME",
    "JSONL_NAME",
    "PGN_NAME",
    "RUN_FILES",
    "EnginePool",
    "EnginesOf",
    "Event",
    "GameEnded",
    "GameFinished",
    "GamePlayer",
    "GameStarted",
    "Interrupt",
    "LocalPlayer",
    "Notice",
    "Run",
    "RunError",
    "RunKind",
    "RunOptions",
    "RunOutcome",
    "RunSpec",
    "ServerSpec",
    "SprtProgress",
    "SprtTracker",
    "SprtUpdate",
    "TurnPlayed",
    "Verdict",
    "build_spec",
    "game_spec",
    "play_match",
    "run_workers",
    "server_spec",
]
