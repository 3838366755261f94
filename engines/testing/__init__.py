"""Deliberately broken UQI engines for the arena's fault tests, one fault each.

Each bot is a module runnable as ``python -m quarto_arena.engines.testing.NAME`` (see :func:`command`); apart
from its one fault it speaks correct UQI. :data:`BROKEN` says what each one does wrong and
:data:`EXPECTED_TERMINATION` what the arena must record for a game it spoils (values of
``quarto_arena.arena.records.Termination``), so fault tests can be table driven.

``ignores_quit`` plays correctly: its games end ``normal``, and the fault is that it must be killed afterwards.

:data:`NONCOMPLIANT` lists bots whose fault only ``quarto-arena check`` (or a game in another variant) shows.
:data:`HOSTILE` lists bots that attack the arena itself rather than break one rule of a game: floods meant to
exhaust its memory, processes that escape its supervision, a closed output, answers at the last millisecond. Some
take arguments; their tests drive them one by one. :data:`MEASURED` lists correct bots whose behaviour is a known
function of their options, what the arena's tools are measured against.
"""

from __future__ import annotations

import sys
from typing import Final

__all__ = ["BROKEN", "EXPECTED_TERMINATION", "HOSTILE", "MEASURED", "NONCOMPLIANT", "YESTERDAY", "command"]

BROKEN: Final[dict[str, str]] = {
    "crash_on_go": "exits with status 3 on the first go, without a turn",
    "hang_on_go": "on the first go the whole process sleeps forever: no turn, ignores stop, isready, quit and EOF",
    "illegal_turn": "once a piece is on the board, places its piece on an occupied square",
    "malformed_reply": "answers go with 'turn zz9'",
    "false_claim": "calls QUARTO! ('b3!') with a placement that completes nothing",
    "slow_handshake": "sleeps before uqiok (argument or QUARTO_ARENA_HANDSHAKE_DELAY seconds, default 60)",
    "no_handshake": "answers uqi with 'id name' but never sends uqiok",
    "flood": "on go writes an endless line (no newline ever) to stdout",
    "exit_midgame": "answers two searches, then exits with status 0 on the third go",
    "ignores_quit": "plays correctly but ignores quit, end of input and SIGTERM: it must be killed",
    "leaves_child": "starts 'sleep 1000' in its process group (holding stdout open), then exits 3 on go",
    "invalid_utf8": "answers go with a turn line that is not UTF-8",
    "no_readyok": "never answers isready",
}
"""Bot name -> its one fault."""

EXPECTED_TERMINATION: Final[dict[str, str]] = {
    "crash_on_go": "disconnect",
    "hang_on_go": "time forfeit",
    "illegal_turn": "illegal turn",
    "malformed_reply": "malformed reply",
    "false_claim": "false claim",
    "slow_handshake": "stall",
    "no_handshake": "stall",
    "flood": "malformed reply",
    "exit_midgame": "disconnect",
    "ignores_quit": "normal",
    "leaves_child": "disconnect",
    "invalid_utf8": "malformed reply",
    "no_readyok": "stall",
}
"""Bot name -> the termination reason of a game it spoils (a ``Termination`` value)."""


NONCOMPLIANT: Final[dict[str, str]] = {
    "omits_call": "plays a strict game's winning placement bare ('d1', not 'd1!') and never claims",
    "ignores_attributes": "counts all four attributes whatever newgame said",
    "crash_on_invalid_position": "dies with a traceback on a position it cannot build",
    "never_resets": "keeps its position from one game to the next when a position line repeats the last",
}
"""Bot name -> a fault that a game in the default variant never shows, but ``quarto-arena check`` finds (SPEC's
rules for strict claims, attribute subsets, invalid positions, a second game on one process)."""


HOSTILE: Final[dict[str, str]] = {
    "flood_lines": "floods info, error, garbage or stderr lines on go, or option lines in the handshake",
    "escapes_session": "leaves a setsid() child and a double-forked daemon behind (pids written to a file)",
    "closes_stdout": "closes its standard output on the first go but stays alive",
    "answers_late": "answers every go movetime N at N minus 1 ms",
    "hang_once": "hangs on the first go once (a marker file), then plays correctly in every later process",
    "slow_start": "takes 1.5 s to start and 80 ms longer over its first search in a process (pids to a file)",
    "escape_strings": "puts terminal escape sequences in id name, error lines, refusals and turns",
    "zmtp_flood": "a ZeroMQ peer (server or client) that sends an endless multipart message or a huge frame",
}
"""Bot name -> how it attacks the arena (resources, supervision, the clock)."""


YESTERDAY: Final[dict[str, str]] = {
    "winning_give": "the Java bot's reading of UQI 1: 'turns d10' (a winning placement, and a piece on the board"
    " given) ends the game, and go gets 'error go the game is over: a placement won'",
    "keeps_position": "keeps its last valid position after an invalid one, and searches it",
    "any_uqi": "answers every uqi line with the handshake ('uqi 0', 'uqi 1 extra'), and takes 'isready now' as isready",
    "fields_in_order": "refuses the newgame fields in another order than shapes, attributes, claims",
    "lax_values": "compares a combo value as written, clamps a spin into its range, searches 'go depth 0' one turn",
    "silent_lines": "drops a line over 4096 bytes or not UTF-8 without a word",
    "serves_during_search": "serves position, go, newgame and setoption during a held 'go infinite'",
    "no_movestogo": "refuses 'go ... movestogo N' (an unknown limit, as before movestogo was added)",
    "banner": "writes a banner line before its handshake, which UQI 1 let an arena log and pass over",
    "every_should_wrong": "every reading above, and every other should missed: an error for an idle stop, its own"
    " error texts, a malformed newgame played as the standard game, 80% of a movetime spent",
}
"""Yesterday's bots (:mod:`.yesterday`): bot -> the earlier reading of SPEC.md it follows, which misses only shoulds
(rules for inputs an arena never sends, added since UQI 1 was first published). Each plays correctly and passes
``quarto-arena check`` with warnings; ``--strict`` fails it."""


MEASURED: Final[dict[str, str]] = {
    "tunable": "greedy but for random turns, their share a known function of its options P1..P6 (tune's figures)",
}
"""Bot name -> what it is: a correct bot whose behaviour is a known function of its options, to measure the arena's
tools against (benchmarks/tune.py)."""


def command(name: str, *args: str) -> list[str]:
    """The command line that runs broken, hostile, yesterday's or measured bot ``name`` with this Python interpreter."""
    if name in YESTERDAY:
        return [sys.executable, "-m", f"{__name__}.yesterday", name, *args]
    if name not in BROKEN and name not in HOSTILE and name not in NONCOMPLIANT and name not in MEASURED:
        choices = ", ".join(sorted((*BROKEN, *HOSTILE, *NONCOMPLIANT, *MEASURED, *YESTERDAY)))
        raise ValueError(f"no broken bot {name!r}; choose from {choices}")
    return [sys.executable, "-m", f"{__name__}.{name}", *args]
