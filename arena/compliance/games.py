"""Steps 13-19 of the check: the game's rules as a bot must apply them (strict claims, every variant in a search),
and what a bot must survive (invalid and finished positions, a search with no clock, a second game, a long line).

Each probe is a position in which one plausible bug makes the engine's answer illegal or missing, so a failure
names the rule: a bare winning placement in a strict game, a win that only counts under the attributes or shapes
the engine was not told to use, a turn for a position that holds none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from quarto_arena.protocol.notation import parse_variant
from quarto_arena.protocol.rules import Position, Variant
from quarto_arena.protocol.uqi import MAX_GO_VALUE, ErrorReply, Go, Info, ReadyOk, format_command

from ..timecontrol import SearchClock
from .checker import Checker, StepSkipped, fail_step, quoted, read_reply
from .steps import Probe, refusals, search_probe, start_new_game

_STRICT: Final = parse_variant("standard", "all", "strict")
_AUTO: Final = Variant()

# --- 13 and 14: the rules in a search ---------------------------------------------------------------------------

_ROW: Final = "..../..../..../012. 3"
"""d1 completes row 1 with piece 3 (0 1 2 3: all light, all round): a win with colour or shape counted."""
_SQUARE: Final = "..../..../2.../01.. 3"
"""b2 completes the 2x2 square a1 b1 a2 b2 with piece 3: a win only with advanced shapes."""
_SQUARE_2: Final = "..../..../.2../.01. 3"
"""The same one square to the right: c2 completes b1 c1 b2 c2."""

STRICT_PROBES: Final[tuple[Probe, ...]] = (
    Probe("a strict game where d1 wins (called 'd1!', or played with a give)", _STRICT, f"position {_ROW}"),
    Probe(
        "a strict game where the opponent missed d1 (the claim '!' wins)",
        _STRICT,
        f"position {_ROW} turns d14",
    ),
    Probe(
        "a strict game where the missed d1 is dead ('!' is a false claim)",
        _STRICT,
        f"position {_ROW} turns d14 a45 b46",
    ),
    Probe(
        "a strict game where the last square may win (called or not)",
        _STRICT,
        "position 91eb/.4d5/f630/8ac7 2",
    ),
    Probe(
        "a strict advanced game where b2 completes a 2x2 square",
        parse_variant("advanced", "all", "strict"),
        f"position {_SQUARE}",
    ),
)
"""Step 13: a strict game's calls and claims (SPEC §1.1)."""

VARIANT_PROBES: Final[tuple[Probe, ...]] = (
    # No line repeats or extends the one before it: step 18 is where one game's position follows another's.
    Probe(
        "attributes height,fill: d1 completes no group (a give is due)",
        parse_variant("standard", "height,fill", "auto"),
        f"position {_ROW}",
    ),
    Probe(
        "standard shapes: b2 completes a 2x2 square, which does not count (a give is due)",
        _AUTO,
        f"position {_SQUARE}",
    ),
    Probe("attributes color: d1 wins", parse_variant("standard", "color", "auto"), f"position {_ROW}"),
    Probe("advanced shapes: c2 wins", parse_variant("advanced", "all", "auto"), f"position {_SQUARE_2}"),
    Probe(
        "advanced shapes, attributes height,fill: the 2x2 square does not count (a give is due)",
        parse_variant("advanced", "height,fill", "auto"),
        f"position {_SQUARE}",
    ),
    Probe(
        "advanced shapes, strict claims, attributes shape: c2 is called or played with a give",
        parse_variant("advanced", "shape", "strict"),
        f"position {_SQUARE_2}",
    ),
)
"""Step 14: attribute subsets and the advanced shapes in a search (SPEC §1.1, §4.3)."""

_MOVETIME: Final = Go(movetime=200)


async def _probe_searches(ck: Checker, probes: tuple[Probe, ...]) -> None:
    for probe in probes:
        if probe.variant in ck.unsupported:
            ck.note(f"{probe.label} not searched: the engine does not support {probe.variant.describe()}")
            continue
        await start_new_game(ck, probe.variant)
        await search_probe(ck, probe, probe.position(), _MOVETIME)


async def step_strict_claims(ck: Checker) -> None:
    """13. Strict claims: a placement that completes a group is called (``d1!``) or played with a give, never bare;
    a missed alignment may be claimed with ``!`` on the next turn only; the last square may be called (SPEC §1.1)."""
    if _STRICT in ck.unsupported:
        raise StepSkipped("the engine does not support strict claims (step 5)")
    await _probe_searches(ck, STRICT_PROBES)


async def step_variants(ck: Checker) -> None:
    """14. Attribute subsets and shapes in a search: a group counts only with the attributes and shapes of the last
    ``newgame`` (SPEC §1.1, §4.3)."""
    await _probe_searches(ck, VARIANT_PROBES)


# --- 15 and 16: positions with nothing to search ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Refused:
    """A ``position`` line the engine must refuse (or, finished, must not search), and why."""

    line: str
    why: str
    command: str
    """The command whose ``error`` SPEC prescribes: ``position`` (invalid) or ``go`` (finished)."""
    variant: Variant = _AUTO


INVALID: Final[tuple[_Refused, ...]] = (
    _Refused("position ..../..../..../00.. 3", "piece 0 twice", "position"),
    _Refused("position startpos turns 3 a1e a1f", "a turn on an occupied square", "position"),
    _Refused("position startpos turns 3 a1e zz", "a token that is not a turn", "position"),
    _Refused("position STARTPOS", "'startpos' in capitals (a keyword is lower case)", "position"),
    _Refused("position ..../..../..../012. 3 turns d10", "a winning placement giving a piece on the board", "position"),
    _Refused(
        "position ..../..../..../012. 3 turns d1", "a bare winning placement under strict claims", "position", _STRICT
    ),
)
"""Step 15: invalid positions (SPEC §2.3, §4.4)."""

FINISHED: Final[tuple[_Refused, ...]] = (
    _Refused("position ..../..../..../0123 -", "a won game (row 1 complete)", "go"),
    _Refused("position 91eb/24d5/f630/8ac7 -", "a full board (a draw)", "go"),
    _Refused("position 91eb/24d5/f630/8ac7 -", "a full board in a strict game", "go", _STRICT),
    _Refused("position ..../..../..../012. 3 turns d1", "a game won by the last turn", "go"),
)
"""Step 16: finished games, where there is no turn to play (SPEC §2.3)."""

_SERVED: Final = Probe("a valid position after the refused ones", _AUTO, "position startpos turns 3 a1e")


async def _refuse(ck: Checker, case: _Refused, section: str) -> None:
    """``position`` + ``go`` + ``stop`` + ``isready``: an ``error`` for the command SPEC names and no ``turn``, then
    ``readyok``; each miss is a warning (these are shoulds: an arena never sends such a position), and the next case
    is tried all the same. The ``stop`` ends a search the engine may have started, so its turn comes now."""
    go = format_command(Go(movetime=100))
    await ck.session.send(case.line, go, "stop", "isready")
    sent = f"{quoted(case.line)} ({case.why}) and {quoted(go)}"
    errors, turns = await refusals(
        ck,
        f"readyok after {sent}, 'stop' and 'isready'",
        f"after {quoted(case.line)}",
        lambda line: f"sent {sent}, got the unexpected {quoted(line)}",
    )
    if turns:
        ck.warn(section, f"sent {sent}, got {quoted(turns[0])}: there is no position to search, so no turn")
    words = [e.split()[1].rstrip(":") if len(e.split()) > 1 else "" for e in errors]
    if case.command not in words:
        got = quoted(errors[0]) if errors else "no error line"
        ck.warn(section, f"sent {sent}, got {got}, not 'error {case.command} ...'")
    elif "go" not in words and not turns:
        ck.warn(section, f"no 'error go ...' for {quoted(go)} after {quoted(case.line)}: a go not searched is refused")


async def step_invalid_positions(ck: Checker) -> None:
    """15. An invalid position or an illegal turn in ``position``: ``error position ...``, then ``go`` gets
    ``error go ...`` and no turn; the next valid position is searched as usual (SPEC §4.4)."""
    for case in INVALID:
        if case.variant in ck.unsupported:
            continue
        await start_new_game(ck, case.variant)
        await _refuse(ck, case, "§4.4")
    await start_new_game(ck, _SERVED.variant)
    await search_probe(ck, _SERVED, _SERVED.position(), _MOVETIME)
    empty = Probe("'position startpos turns' (no turns: the start)", _AUTO, "position startpos turns")
    await search_probe(ck, empty, empty.position(), _MOVETIME)


async def step_finished_positions(ck: Checker) -> None:
    """16. A finished game (a win on the board under auto claims, a full board): ``go`` gets ``error go ...`` and no
    turn; the next valid position is searched as usual (SPEC §2.3)."""
    for case in FINISHED:
        if case.variant in ck.unsupported:
            continue
        await start_new_game(ck, case.variant)
        await _refuse(ck, case, "§2.3")
    await start_new_game(ck, _SERVED.variant)
    await search_probe(ck, _SERVED, _SERVED.position(), _MOVETIME)


# --- 17: no clock -------------------------------------------------------------------------------------------


NO_CLOCK: Final[tuple[tuple[Probe, Go], ...]] = (
    (Probe("the start position (a whole solve)", _AUTO, "position startpos"), Go(depth=17)),
    (Probe("the opening placement", _AUTO, "position startpos turns 3"), Go(nodes=MAX_GO_VALUE)),
)
"""Step 17: searches bounded only by depth or nodes, far beyond what can be searched in time."""


async def step_safety_time(ck: Checker) -> None:
    """17. ``go depth N`` and ``go nodes N`` with no clock, as deep as the game: a legal turn within the arena's safety
    deadline (60 s: a game is lost after it) and, a should, within the safety time, 10 s (SPEC §4.5)."""
    for probe, go in NO_CLOCK:
        await start_new_game(ck, probe.variant)
        seconds = (await search_probe(ck, probe, probe.position(), go)).ms / 1000
        if seconds > ck.timeouts.safety_time:
            line = format_command(go)
            ck.warn(
                "§4.5", f"took {seconds:.1f} s for {quoted(line)}, beyond the {ck.timeouts.safety_time:g} s safety time"
            )


# --- 18: a second game --------------------------------------------------------------------------------------


GAMES: Final[tuple[Probe, ...]] = (
    Probe("game 1 (auto claims): d1 wins", _AUTO, f"position {_ROW}"),
    Probe("game 2 (strict claims), the same position: d1 is called or played with a give", _STRICT, f"position {_ROW}"),
    Probe(
        "game 3 (attributes height,fill), the same position: d1 completes nothing",
        parse_variant("standard", "height,fill", "auto"),
        f"position {_ROW}",
    ),
    Probe("game 4 (auto claims), a fresh start: piece 5 on an empty board", _AUTO, "position startpos turns 5"),
)
"""Step 18: games one after another on the same process, each changing what a turn from the last game means."""


async def step_second_game(ck: Checker) -> None:
    """18. Games one after another on one process: each ``newgame`` starts afresh, so nothing of the last game (its
    variant, its position, a cached answer) decides a turn of the next (SPEC §4.3, §4.4)."""
    for probe in GAMES:
        if probe.variant in ck.unsupported:
            continue
        await start_new_game(ck, probe.variant)
        await search_probe(ck, probe, probe.position(), _MOVETIME)
        # The next game's search comes right after this one, without even a pause.


# --- 19: long lines -----------------------------------------------------------------------------------------

_LONG: Final = "setoption name NoSuchOption value " + "x" * 5000
"""A line of more than 4096 bytes."""


async def step_long_line(ck: Checker) -> None:
    """19. A line over 4096 bytes gets one ``error`` line and is otherwise ignored; a valid line of exactly 4096
    bytes (white space around a ``position``) is read as usual (SPEC §3.1)."""
    await ck.session.send(_LONG, "isready")
    deadline = SearchClock.started(ck.timeouts.ready)
    errors: list[str] = []
    shown = f"a line of {len(_LONG)} bytes ({quoted(_LONG)})"
    while True:
        line = await ck.session.read(deadline, f"readyok after {shown}")
        match read_reply(ck, line, f"after {shown}"):
            case ReadyOk():
                break
            case ErrorReply():
                errors.append(line)
            case Info() | None:
                pass
            case _:
                fail_step(f"sent {shown}, got the unexpected {quoted(line)}")
    if not errors:
        fail_step(f"sent {shown}, got no error line (SPEC §3.1: answer 'error line too long' and carry on)")
    if len(errors) > 1:
        fail_step(f"sent {shown}, got {len(errors)} error lines, first {quoted(errors[0])} (SPEC §3.1: exactly one)")
    base = "position startpos turns 3 a1e"
    # Spaces and tabs around a line are not part of it (SPEC §3.1), but they count towards its 4096 bytes.
    padded = base + " \t" * ((4096 - len(base)) // 2)
    padded += " " * (4096 - len(padded))
    probe = Probe("a position line of exactly 4096 bytes (white space at its end)", _AUTO, padded)
    await start_new_game(ck, _AUTO)
    position: Position = _SERVED.position()
    await search_probe(ck, probe, position, _MOVETIME)
