"""Every step of the check in order (:data:`STEPS`) and :func:`run_check`, which runs them against an engine."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final

from ..engine import Connector, EngineConfig
from .checker import CannotStart, Checker, CheckTimeouts, Step
from .games import (
    step_finished_positions,
    step_invalid_positions,
    step_long_line,
    step_safety_time,
    step_second_game,
    step_strict_claims,
    step_variants,
)
from .malformed import step_malformed
from .report import CheckReport, Status, StepResult, strictly
from .steps import (
    step_crlf,
    step_during_search,
    step_end_of_input,
    step_infinite,
    step_isready,
    step_new_games,
    step_one_reply,
    step_options,
    step_quit,
    step_searches,
    step_startup,
    step_unknown_command,
)
from .timing import step_time_use

STEPS: Final[tuple[Step, ...]] = (
    Step(1, "start-up", step_startup, needs_session=False, spec="§4.1"),
    Step(2, "isready", step_isready, spec="§4.7"),
    Step(3, "unknown command", step_unknown_command, spec="§4.9"),
    Step(4, "options", step_options, spec="§4.2"),
    Step(5, "new games", step_new_games, spec="§4.3"),
    Step(6, "searches", step_searches, spec="§4.5, §5.2"),
    Step(7, "infinite + stop", step_infinite, spec="§4.5, §4.6"),
    Step(8, "during a search", step_during_search, spec="§4.10", should=True),
    Step(9, "exactly one reply", step_one_reply, spec="§5.2"),
    Step(10, "\\r\\n line ends", step_crlf, spec="§3.1"),
    Step(11, "quit", step_quit, spec="§3.2, §4.8"),
    Step(12, "end of input", step_end_of_input, needs_session=False, spec="§3.2"),
    Step(13, "strict claims", step_strict_claims, spec="§1.1"),
    Step(14, "attributes and shapes", step_variants, spec="§1.1, §4.3"),
    Step(15, "invalid positions", step_invalid_positions, spec="§4.4", should=True),
    Step(16, "finished games", step_finished_positions, spec="§2.3", should=True),
    Step(17, "depth, nodes: safety", step_safety_time, spec="§4.5"),
    Step(18, "a second game", step_second_game, spec="§4.3, §4.4"),
    Step(19, "long lines", step_long_line, spec="§3.1", should=True),
    Step(20, "malformed commands", step_malformed, spec="§3.1, §4.1, §4.9", should=True),
    Step(21, "time use under load", step_time_use, spec="§4.5", should=True),
)
"""Every step, in order. A step marked ``should`` tests only shoulds of SPEC.md: its failure is a warning."""


async def run_check(
    config: EngineConfig,
    *,
    timeouts: CheckTimeouts | None = None,
    keep_going: bool = False,
    strict: bool = False,
    steps: Sequence[Step] = STEPS,
    connector: Connector | None = None,
) -> CheckReport:
    """Checks the engine ``config`` step by step and returns the report; never raises for an engine fault.

    A step that passes with warnings (a should of SPEC.md not met) passes, unless ``strict``: then it fails
    (:func:`.report.strictly`). Without ``keep_going`` the check stops at the first failed step. Every process it
    started is killed and reaped before this returns, also when it is cancelled (Ctrl-C). ``connector`` gives the
    sessions of a remote bot (``remote:NAME``).
    """
    ck = Checker(config, timeouts or CheckTimeouts(), connector)
    results: list[StepResult] = []
    started = True
    try:
        for step in steps:
            try:
                result = await ck.run_step(step)
            except CannotStart as e:
                started = not (step.number == steps[0].number and not results)
                result = StepResult(step.number, step.name, Status.FAIL, str(e))
            if strict:
                result = strictly(result)
            results.append(result)
            if result.status is Status.FAIL and (not keep_going or not started):
                break
    finally:
        # Shielded so that a second interrupt during the clean-up cannot leave a process behind.
        await asyncio.shield(ck.close())
    return CheckReport(
        config.name,
        config.describe(),
        ck.engine_id,
        tuple(results),
        len(steps),
        started,
        tuple(ck.pids),
    )
