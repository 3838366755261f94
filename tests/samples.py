"""Values of the project's records and specs with every field set away from its default, shared by the tests that
check that every field travels (through the codec, to the cluster's workers)."""

from __future__ import annotations

from quarto_arena.arena.referee import GameSpec
from quarto_arena.arena.timecontrol import TimeControl
from quarto_arena.protocol.notation import parse_variant


def every_field_game_spec() -> GameSpec:
    """A GameSpec whose every field differs from GameSpec()'s (tests/test_cluster.py checks that it stays so)."""
    return GameSpec(
        variant=parse_variant("advanced", "color,fill", "strict"),
        time_control=TimeControl.parse("10+0.1"),
        margin_ms=7,
        start="f410/..../...9/.c7. b",
        opening=("a1e",),
        game_id=17,
        round=3,
        names=("a", "b"),
        adjudicate=9,
    )
