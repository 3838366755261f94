"""The UQI compliance check behind ``quarto-arena check ENGINE``: numbered steps against a real engine.

Like fastchess's built-in checker, each step is one small function that talks to the engine over its real transport
(a process over stdio, or a ZeroMQ endpoint) under short deadlines of its own, and fails with a one-line reason that
quotes the offending line. Every line in both directions is recorded with a time stamp, so a failing step comes back
with the exchange that failed. The check stops at the first failing step unless asked to keep going (it then
restarts the engine before the next step, since its state is unknown), and whatever happens — a failure, an
exception, Ctrl-C — every process it started is killed with its whole process group and reaped before
:func:`run_check` returns or raises.

A step fails only for a *must* of SPEC.md: what a game an arena runs depends on, and every rule of UQI 1 as first
published. What a *should* asks (the rules added since for inputs an arena never sends: invalid or finished
positions, malformed commands, commands during a search, long or non-UTF-8 lines; and the time a bot keeps back) is
a warning naming its section, so a bot that complied with an earlier text of SPEC.md keeps passing; ``--strict``
(:func:`.report.strictly`) makes every warning a failure. What an engine may do and did (refuse a variant) is a
note. Like any conformance tester (SPEC §4.9), the check sends lines an arena never sends: an unknown command,
malformed ones, and commands during a search.

The subpackage: :mod:`.checker` (deadlines, the recorded link, the Checker, what a step is), :mod:`.steps` (steps
1-12, the conversation), :mod:`.games` (steps 13-19, the game's rules and what a bot must survive),
:mod:`.malformed` (step 20), :mod:`.timing` (step 21, the time used under a load of its own), :mod:`.run`
(:data:`STEPS` and :func:`run_check`) and :mod:`.report` (the verdicts and the lines the CLI prints).
"""

from .checker import Checker, CheckTimeouts, Step, StepFailed, StepSkipped
from .report import (
    CheckReport,
    IoLine,
    Status,
    StepResult,
    format_report,
    format_transcript,
    strict_report,
    strictly,
)
from .run import STEPS, run_check

__all__ = [
    "STEPS",
    "CheckReport",
    "CheckTimeouts",
    "Checker",
    "IoLine",
    "Status",
    "Step",
    "StepFailed",
    "StepResult",
    "StepSkipped",
    "format_report",
    "format_transcript",
    "run_check",
    "strict_report",
    "strictly",
]
