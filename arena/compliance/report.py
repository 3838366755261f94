"""What a check finds: the verdict of each step with its I/O, the whole report, and the lines the CLI prints."""

from __future__ import annotations

import dataclasses
import enum
import logging
from dataclasses import dataclass
from typing import Final

from quarto_arena.protocol.uqi import (
    PROTOCOL_VERSION,
)

log = logging.getLogger("quarto_arena.arena.compliance")


_NAME_WIDTH: Final = 24
_SHOWN_LINES: Final = 60


class Status(enum.Enum):
    """How a step ended."""

    PASS = "ok"
    WARN = "warn"
    """Every *must* of the step held; a *should* did not (its warnings say which, with their sections)."""
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class IoLine:
    """One recorded line: ``>`` arena to engine, ``<`` engine to arena, ``#`` an event (start, exit, kill)."""

    at: float
    """Seconds since the step began, on the monotonic clock."""
    direction: str
    """``>``, ``<`` or ``#``."""
    text: str
    """The line without its terminator (a ``\\r`` shown as the two characters ``\\r``)."""

    def __str__(self) -> str:
        return f"{self.at:7.3f} {self.direction} {self.text}"


@dataclass(frozen=True, slots=True)
class StepResult:
    """The outcome of one step."""

    number: int
    """The step's number (1 = start-up)."""
    name: str
    """The step's short name."""
    status: Status
    """Passed, failed or skipped."""
    reason: str = ""
    """One line: why it failed or was skipped (empty when it passed)."""
    warnings: tuple[str, ...] = ()
    """What a *should* of SPEC.md asks and the engine did not do, one line each, naming its section."""
    transcript: tuple[IoLine, ...] = ()
    """Every line of the step, both directions, with time stamps."""
    stderr: tuple[str, ...] = ()
    """The last lines the engine wrote to standard error, for a failed step of a process engine."""
    seconds: float = 0.0
    """How long the step took."""
    notes: tuple[str, ...] = ()
    """What the engine may do and did (a variant it does not play, so not searched): information, never a fault."""


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The result of a compliance check."""

    engine: str
    """The engine's display name."""
    target: str
    """Its command line or endpoint."""
    engine_id: str | None
    """What it said in ``id name``, once the handshake got that far."""
    steps: tuple[StepResult, ...]
    """The steps that ran, in order (without ``--keep-going``, up to the first failure)."""
    total_steps: int
    """How many steps the check has (more than ran when it stopped early)."""
    started: bool = True
    """False when the engine could not even be started (no such command, unusable endpoint)."""
    pids: tuple[int, ...] = ()
    """Every process (= process group) id started for the check, so callers can verify none is left."""

    @property
    def complies(self) -> bool:
        """True when every step ran and none failed (warnings allowed: ``--strict`` makes them failures first)."""
        return self.started and len(self.steps) == self.total_steps and self.first_failure is None

    @property
    def first_failure(self) -> StepResult | None:
        """The first failed step, if any."""
        return next((s for s in self.steps if s.status is Status.FAIL), None)

    @property
    def failed(self) -> tuple[int, ...]:
        """Numbers of the failed steps."""
        return tuple(s.number for s in self.steps if s.status is Status.FAIL)

    @property
    def warned(self) -> tuple[int, ...]:
        """Numbers of the steps that passed with warnings."""
        return tuple(s.number for s in self.steps if s.status is Status.WARN)


def strictly(step: StepResult) -> StepResult:
    """``check --strict``'s verdict on a step: one with warnings fails, its first warning the reason."""
    if step.status is not Status.WARN:
        return step
    return dataclasses.replace(step, status=Status.FAIL, reason=step.warnings[0], warnings=step.warnings[1:])


def strict_report(report: CheckReport, *, keep_going: bool) -> CheckReport:
    """The report of a check run without ``--strict`` as ``--strict`` would have ended it (:func:`strictly`; without
    ``keep_going``, up to the first failure): how a cluster's reports are judged, since its workers run the plain
    check."""
    steps: list[StepResult] = []
    for step in map(strictly, report.steps):
        steps.append(step)
        if step.status is Status.FAIL and not keep_going:
            break
    return dataclasses.replace(report, steps=tuple(steps))


def _exchange(step: StepResult) -> list[str]:
    """What a failed step sent last and what came back after it (or that nothing did), for its failure message."""
    lines = step.transcript
    sent = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].direction == ">"), None)
    if sent is None:
        return []
    # The block of lines sent together, and everything the engine said after them.
    first = sent
    while first > 0 and lines[first - 1].direction == ">":
        first -= 1
    got = [line.text for line in lines[sent + 1 :] if line.direction != ">"]
    out = [f"sent: {lines[i].text}" for i in range(first, sent + 1)][-4:]
    out += [f"got:  {text}" for text in got[-6:]] or ["got:  nothing"]
    return out


def format_transcript(report: CheckReport) -> list[str]:
    """Every line of every step, both directions, with time stamps: what ``check --transcript FILE`` writes."""
    ident = f" ({report.engine_id})" if report.engine_id else ""
    out = [f"# quarto-arena check {report.engine}{ident}: {report.target}"]
    for s in report.steps:
        verdict = s.status.value if not s.reason else f"{s.status.value}: {s.reason}"
        out.append(f"## step {s.number} {s.name}: {verdict}")
        out.extend(f"# warning: {w}" for w in s.warnings)
        out.extend(f"# note: {n}" for n in s.notes)
        out.extend(str(line) for line in s.transcript)
        out.extend(f"# stderr | {line}" for line in s.stderr)
    return out


def format_report(report: CheckReport, *, verbose: bool = False) -> list[str]:
    """The lines ``quarto-arena check`` prints: one per step, the failing steps' I/O, and a summary."""
    ident = f" ({report.engine_id})" if report.engine_id else ""
    out = [f"Checking {report.engine}{ident}: {report.target}"]
    for s in report.steps:
        dots = "." * max(2, _NAME_WIDTH - len(s.name))
        verdict = s.status.value if not s.reason else f"{s.status.value}: {s.reason}"
        out.append(f"{s.number:3d} {s.name} {dots} {verdict}")
        out.extend(f"      warning: {w}" for w in s.warnings)
        out.extend(f"      note: {n}" for n in s.notes)
        if s.status is Status.FAIL:
            out.extend(f"      {line}" for line in _exchange(s))
        if s.status is Status.FAIL or verbose:
            # --verbose shows every line; without it, a failed step's last lines are enough.
            shown = s.transcript if verbose else s.transcript[-_SHOWN_LINES:]
            if len(s.transcript) > len(shown):
                out.append(f"      ... {len(s.transcript) - len(shown)} earlier lines (--verbose shows them)")
            out.extend(f"      {line}" for line in shown)
        if s.status is Status.FAIL and s.stderr:
            out.append("      standard error (last lines):")
            out.extend(f"      | {line}" for line in s.stderr)
    passed = sum(s.status in (Status.PASS, Status.WARN) for s in report.steps)
    skipped = sum(s.status is Status.SKIP for s in report.steps)
    warnings = sum(len(s.warnings) for s in report.steps)
    counts = (
        f"{passed} passed, {len(report.failed)} failed, {skipped} skipped, {warnings} warning{'s' * (warnings != 1)}"
    )
    if report.warned:
        counts += f" (step {', '.join(map(str, report.warned))}: --strict fails them)"
    if not report.started:
        out.append(f"{report.engine} could not be started")
    elif report.complies:
        out.append(f"{report.engine} complies with UQI {PROTOCOL_VERSION}: {counts}")
    else:
        failed = ", ".join(map(str, report.failed))
        out.append(f"{report.engine} does NOT comply with UQI {PROTOCOL_VERSION}: step {failed} failed; {counts}")
        if len(report.steps) < report.total_steps:
            out.append(f"Stopped after step {report.steps[-1].number}; --keep-going runs the remaining steps")
    return out
