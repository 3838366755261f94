"""The rules core against the shared vectors, and every rejection the rules and the notation can give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import oracle
import pytest
from quarto_arena.protocol.notation import (
    NotationError,
    format_position,
    format_turn,
    parse_piece,
    parse_position,
    parse_square,
    parse_turn,
    parse_turns,
    parse_variant,
)
from quarto_arena.protocol.rules import (
    ALL_ATTRIBUTES,
    Attribute,
    ClaimMode,
    IllegalTurn,
    Outcome,
    Position,
    Shapes,
    Turn,
    Variant,
    perft,
    turn_of,
)

DATA = Path(__file__).parent / "data"
PERFT: list[dict[str, Any]] = json.loads((DATA / "perft.json").read_text())
SOLVED: list[dict[str, Any]] = json.loads((DATA / "solved.json").read_text())
PERFT_CLAIMS: list[dict[str, Any]] = json.loads((DATA / "perft_claims.json").read_text())

AUTO = Variant()
STRICT = Variant(claims=ClaimMode.STRICT)

# Row 1 holds 0 1 2 (light round ...); the piece in hand, 3, completes it on d1 (light and round in common).
ROW_OPEN = "..../..../.e../012. 3"
# 15 pieces, piece 1 in hand: on d4 it completes an alignment; in the other, d4 completes none.
LAST_WINS = "54c./7da8/2e69/f03b 1"
LAST_DRAWS = "1e4./f5c0/a2bd/7938 6"


def vector_id(v: dict[str, Any]) -> str:
    claims = v.get("claims", "auto")
    return f"{v['variant']}-{'+'.join(v['attributes'])}-{claims}-{v['position']}-d{v.get('depth', '')}"


def variant_of(v: dict[str, Any]) -> Variant:
    return parse_variant(v["variant"], v["attributes"], v.get("claims", "auto"))


def position_of(v: dict[str, Any]) -> Position:
    return parse_position(v["position"], variant_of(v))


def play(text: str, turns: str, variant: Variant = AUTO) -> Position:
    return parse_position(text, variant).play(parse_turns(turns))


def rejection(position: Position, token: str) -> IllegalTurn:
    with pytest.raises(IllegalTurn) as info:
        position.apply(parse_turn(token))
    return info.value


# --- vectors -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("vector", PERFT, ids=vector_id)
def test_perft_vectors(vector: dict[str, Any]) -> None:
    assert perft(position_of(vector), vector["depth"]) == vector["nodes"]


def test_perft_vectors_cover_every_kind() -> None:
    assert len(PERFT) == 39
    assert {v["variant"] for v in PERFT} == {"standard", "advanced"}
    assert any(len(v["attributes"]) < 4 for v in PERFT)


@pytest.mark.slow
@pytest.mark.parametrize("vector", PERFT_CLAIMS, ids=vector_id)
def test_perft_vectors_of_both_claim_rules(vector: dict[str, Any]) -> None:
    # SPEC.md §2.5: strict claims count b3! and every missed b3X, both c2! and c2 on the last square, and !.
    assert perft(position_of(vector), vector["depth"]) == vector["nodes"]
    # The counts come from the oracle's brute force, which shares no code with the rules core: recount them.
    assert oracle.perft(oracle.parse(vector["position"], variant_of(vector)), vector["depth"]) == vector["nodes"]


def test_perft_vectors_of_both_claim_rules_cover_the_strict_turn_forms() -> None:
    kinds: set[str] = set()
    for vector in (v for v in PERFT_CLAIMS if v["claims"] == "strict"):
        position = position_of(vector)
        for turn in position.legal_turns():
            completes = turn.place is not None and position.wins_at(turn.place)
            last = position.placed == 15
            if turn.call:
                kinds.add("last square called" if last else "call")
            elif completes:
                kinds.add("last square not called" if last else "missed alignment")
                if not last and vector["depth"] >= 2:
                    kinds.update("claim" for t in position.apply(turn).legal_turns() if t.claim)
    assert kinds == {"call", "missed alignment", "claim", "last square called", "last square not called"}
    assert {v["claims"] for v in PERFT_CLAIMS} == {"auto", "strict"}
    assert {v["variant"] for v in PERFT_CLAIMS} == {"standard", "advanced"}


@pytest.mark.parametrize("vector", SOLVED, ids=vector_id)
def test_solved_turn_counts_and_best_turns(vector: dict[str, Any]) -> None:
    position = position_of(vector)
    legal = position.legal_turns()
    assert position.count_turns() == vector["turns"]
    assert len(legal) == vector["turns"]
    assert len(set(legal)) == len(legal)
    for best in vector["best_turns"]:
        give = None if best["give"] is None else parse_piece(best["give"])
        turn = turn_of(place=parse_square(best["place"]), give=give)
        assert turn in legal, f"best turn {turn} is not legal in {vector['position']}"
        if give is None:
            assert position.apply(turn).is_over


def test_perft_conventions() -> None:
    start = Position.start()
    assert perft(start, 0) == 1
    assert perft(start, 1) == 16
    won = play(ROW_OPEN, "d1")
    assert won.is_over
    assert [perft(won, d) for d in range(4)] == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="depth must be at least 0"):
        perft(start, -1)


# --- turns and their rejections ------------------------------------------------------------------------------------


def test_ordinary_turns() -> None:
    p = Position.start().apply(parse_turn("7"))
    assert p.hand == 7 and p.placed == 0 and p.count_turns() == 16 * 15
    p = p.apply(parse_turn("b3e"))
    assert p.piece_at(parse_square("b3")) == 7 and p.hand == 0xE
    assert format_position(p) == "..../.7../..../.... e"
    assert 7 not in p.pieces_available() and 0xE not in p.pieces_available()


def test_occupied_square() -> None:
    p = parse_position(ROW_OPEN)
    assert str(rejection(p, "b2e")) == "b2 is occupied"
    assert str(rejection(p, "b2!")) == "b2 is occupied"


def test_piece_already_on_the_board() -> None:
    p = parse_position(ROW_OPEN)
    assert str(rejection(p, "a4e")) == "piece e is already on the board"
    given = parse_position("e.../..../..../.... -")
    assert str(rejection(given, "e")) == "piece e is already on the board"


def test_piece_being_placed_cannot_be_given() -> None:
    assert str(rejection(parse_position(ROW_OPEN), "a43")) == "piece 3 is the piece being placed"


def test_a_piece_must_be_given() -> None:
    err = rejection(parse_position(ROW_OPEN), "a4")
    assert str(err) == "a piece must be given"
    assert not err.false_claim


def test_turn_shape_against_the_hand() -> None:
    assert str(rejection(parse_position(ROW_OPEN), "5")) == "piece 3 is in hand and must be placed first"
    assert str(rejection(Position.start(), "a15")) == "no piece in hand: this turn only gives a piece"
    assert str(rejection(Position.start(), "a1!")) == "no piece in hand: this turn only gives a piece"


def test_no_turn_after_the_game_is_over() -> None:
    won = play(ROW_OPEN, "d1")
    assert won.outcome is Outcome.WIN
    assert won.legal_turns() == [] and won.count_turns() == 0
    for token in ("a45", "a4", "5", "!", "a4!"):
        assert str(rejection(won, token)) == "the game is over"


def test_false_call_auto() -> None:
    err = rejection(parse_position(ROW_OPEN), "a4!")
    assert err.false_claim
    assert str(err) == "QUARTO! called, but a4 completes no alignment"


def test_call_in_auto_means_the_placement() -> None:
    p = parse_position(ROW_OPEN)
    assert p.apply(parse_turn("d1!")) == p.apply(parse_turn("d1"))
    assert p.apply(parse_turn("d1")).outcome is Outcome.WIN


def test_claims_do_not_exist_in_auto_mode() -> None:
    for position in (Position.start(), parse_position(ROW_OPEN)):
        err = rejection(position, "!")
        assert str(err) == "claims exist only with strict claims; wins are automatic in this variant"
        assert not err.false_claim


def test_give_after_an_automatic_win_is_accepted_and_dropped() -> None:
    p = parse_position(ROW_OPEN)
    turn = parse_turn("d15")
    assert p.legal_turns().count(parse_turn("d1")) == 1
    assert turn not in p.legal_turns()
    after = p.apply(turn)
    assert after == p.apply(parse_turn("d1"))
    assert after.outcome is Outcome.WIN and after.hand is None
    assert p.canonical(turn) == parse_turn("d1")
    assert p.canonical(parse_turn("a45")) == parse_turn("a45")


def test_strict_call_and_missed_alignment() -> None:
    p = parse_position(ROW_OPEN, STRICT)
    legal = p.legal_turns()
    assert parse_turn("d1!") in legal and parse_turn("d15") in legal and parse_turn("d1") not in legal
    assert p.apply(parse_turn("d1!")).outcome is Outcome.WIN
    err = rejection(p, "d1")
    assert str(err) == "a piece must be given, or QUARTO! called (this placement completes an alignment)"
    missed = p.apply(parse_turn("d15"))
    assert missed.claimable and missed.outcome is Outcome.ONGOING and missed.hand == 5
    assert p.canonical(parse_turn("d15")) == parse_turn("d15")


def test_strict_false_call_and_false_claim() -> None:
    p = parse_position(ROW_OPEN, STRICT)
    call = rejection(p, "a4!")
    assert call.false_claim and str(call) == "QUARTO! called, but a4 completes no alignment"
    for position in (p, Position.start(STRICT)):
        claim = rejection(position, "!")
        assert claim.false_claim
        assert str(claim) == "no alignment to claim: the previous placement completed none, or it was called"


def test_strict_claim_window_lasts_exactly_one_turn() -> None:
    missed = play(ROW_OPEN, "d15", STRICT)
    assert missed.legal_turns()[0] == Turn(claim=True)
    assert missed.count_turns() == len(missed.legal_turns())
    claimed = missed.apply(parse_turn("!"))
    assert claimed.outcome is Outcome.WIN and not claimed.claimable and claimed.hand is None
    later = missed.apply(parse_turn("a46"))
    assert not later.claimable and later.outcome is Outcome.ONGOING
    assert rejection(later, "!").false_claim
    # The dead alignment stays dead: completing nothing new, a call is still false.
    assert rejection(later, "c4!").false_claim


def test_strict_board_alignment_is_dead() -> None:
    p = parse_position("..../..../..../0123 4", STRICT)
    assert p.outcome is Outcome.ONGOING and not p.claimable
    assert rejection(p, "!").false_claim
    with pytest.raises(NotationError, match="already shows a winning alignment"):
        parse_position("..../..../..../0123 4", AUTO)
    assert parse_position("..../..../..../0123 -", AUTO).outcome is Outcome.WIN


def test_sixteenth_placement() -> None:
    wins, draws = parse_position(LAST_WINS), parse_position(LAST_DRAWS)
    assert wins.legal_turns() == [parse_turn("d4")]
    assert wins.apply(parse_turn("d4")).outcome is Outcome.WIN
    assert draws.legal_turns() == [parse_turn("d4")]
    assert draws.apply(parse_turn("d4")).outcome is Outcome.DRAW
    for token in ("d40", "d46"):
        assert str(rejection(draws, token)) == "the board is full: no piece is left to give"


def test_sixteenth_placement_strict() -> None:
    wins = parse_position(LAST_WINS, STRICT)
    assert wins.legal_turns() == [parse_turn("d4!"), parse_turn("d4")]
    assert wins.apply(parse_turn("d4!")).outcome is Outcome.WIN
    uncalled = wins.apply(parse_turn("d4"))
    assert uncalled.outcome is Outcome.DRAW and not uncalled.claimable
    assert str(rejection(wins, "d40")) == "the board is full: no piece is left to give"
    draws = parse_position(LAST_DRAWS, STRICT)
    assert draws.legal_turns() == [parse_turn("d4")]
    assert rejection(draws, "d4!").false_claim


def test_turn_constructor_rejections() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "a turn places a piece, gives a piece, or claims"),
        ({"claim": True, "place": 1}, "a claim is a whole turn"),
        ({"give": 3, "call": True}, "QUARTO! is called with a placement"),
        ({"place": 1, "give": 2, "call": True}, "a QUARTO! call ends the game"),
        ({"place": 16, "give": 2}, "square index 16 is off the board"),
        ({"place": 1, "give": 16}, "piece 16 does not exist"),
    ]
    for fields, message in cases:
        with pytest.raises(ValueError, match=message):
            Turn(**fields)
        with pytest.raises(ValueError, match=message):
            turn_of(**fields)


def test_turn_of_rejects_out_of_range_indices() -> None:
    """turn_of uses 16 as its own 'none' index internally; it must not let a caller's 16 slip through as None."""
    for place, give in ((16, 2), (1, 16), (16, 16)):
        with pytest.raises(ValueError):
            turn_of(place=place, give=give)


def test_from_board_rejections() -> None:
    with pytest.raises(ValueError, match="a board has 16 cells, not 15"):
        Position.from_board([None] * 15, None)
    with pytest.raises(ValueError, match="piece 3 is on the board twice"):
        Position.from_board([3, 3] + [None] * 14, None)
    with pytest.raises(ValueError, match="piece 3 is in hand and on the board"):
        Position.from_board([3] + [None] * 15, 3)
    with pytest.raises(ValueError, match="piece 16 does not exist"):
        Position.from_board([16] + [None] * 15, None)
    with pytest.raises(ValueError, match="at least one attribute"):
        Variant(attributes=frozenset())


def test_variants() -> None:
    assert parse_variant() == Variant() == Variant(Shapes.STANDARD, ALL_ATTRIBUTES, ClaimMode.AUTO)
    v = parse_variant("Advanced", "fill+color", "STRICT")
    assert v == Variant(Shapes.ADVANCED, frozenset({Attribute.COLOR, Attribute.FILL}), ClaimMode.STRICT)
    assert v.describe() == "advanced, color+fill, strict claims"
    assert len(v.lines) == 19 and len(Variant().lines) == 10


def test_attribute_subsets_change_wins() -> None:
    # 0 1 2 3 share colour and shape only: with height alone counted, d1 does not win.
    height = parse_variant("standard", "height")
    assert not parse_position(ROW_OPEN, height).wins_at(parse_square("d1"))
    assert parse_position(ROW_OPEN, parse_variant("standard", "shape")).wins_at(parse_square("d1"))


def test_two_by_two_squares_win_in_advanced_only() -> None:
    text = "..../..../13../0... 5"  # 0 1 3 5 share colour; b1 completes the a1-b2 square
    assert parse_position(text, parse_variant("advanced")).winning_squares() == [parse_square("b1")]
    assert parse_position(text).winning_squares() == []


# --- notation ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("....1/..../..../.... -", "row 4 has 5 cells; expected 4 ('....1')"),
        ("..../..../..../... -", "row 1 has 3 cells; expected 4 ('...')"),
        ("..../..../.... -", "board '..../..../....' has 3 rows; expected 4 separated by '/'"),
        ("..x./..../..../.... -", "'x' on c4 is not a piece (0-f) or '.'"),
        ("..../..../..../.... g", "'g' is not a piece in hand (one hex digit, or '-')"),
        ("..../..../..../.... 12", "'12' is not a piece in hand (one hex digit, or '-')"),
        ("1.../..../..../...1 -", "piece 1 is on a4 and d1"),
        ("1.../..../..../.... 1", "piece 1 is in hand and already on the board at a4"),
        ("..../..../..../....", "has no piece in hand: add a space and a hex digit, or '-'"),
        ("..../..../..../.... - x", "has 3 fields; expected the board, a space, and the piece in hand or '-'"),
        ("0123/..../..../.... 4", "the board already shows a winning alignment, so no piece can be in hand"),
    ],
)
def test_position_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(NotationError) as info:
        parse_position(text)
    assert message in str(info.value)


def test_startpos_and_case_insensitivity() -> None:
    start = Position.start()
    assert parse_position("startpos") == start
    assert parse_position("  StartPos ") == start
    assert parse_position("..../..../..../.... -") == start
    upper = parse_position("  A.B./..C./..../..E. F ")
    assert format_position(upper) == "a.b./..c./..../..e. f"
    assert parse_position("startpos", STRICT) == Position.start(STRICT)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("b3!e", "a QUARTO! call ends the game, so no piece may follow the '!'"),
        ("e3", "does not start with a square (a1..d4) or a piece (0-f)"),
        ("b5", "does not start with a square (a1..d4) or a piece (0-f)"),
        ("g", "'g' is not a piece (0-f) or a square"),
        ("", "empty turn token"),
        ("b3ee", "'ee' after the square is not a piece (one hex digit) or '!'"),
    ],
)
def test_turn_errors_name_the_problem(token: str, message: str) -> None:
    with pytest.raises(NotationError) as info:
        parse_turn(token)
    assert message in str(info.value)


def test_turn_tokens() -> None:
    assert parse_turn("B3E") == Turn(place=parse_square("b3"), give=0xE)
    assert parse_turn("a") == Turn(give=0xA)
    assert parse_turn("A1") == Turn(place=0)
    assert parse_turn("d4!") == Turn(place=15, call=True)
    assert parse_turn("!") == Turn(claim=True)
    assert [format_turn(t) for t in parse_turns("7 B3E c1 D4! !")] == ["7", "b3e", "c1", "d4!", "!"]
    with pytest.raises(NotationError, match="turn 2: turn 'b3!e'"):
        parse_turns("a15 b3!e")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("weird",), "unknown variant 'weird'; expected standard or advanced"),
        (("standard", "color,bogus"), "unknown attribute 'bogus'"),
        (("standard", "color,color"), "attribute 'color' is given twice"),
        (("standard", ""), "no attributes given"),
        (("standard", "all", "lax"), "unknown claim mode 'lax'; expected auto or strict"),
    ],
)
def test_variant_errors_name_the_problem(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(NotationError, match=message):
        parse_variant(*args)


def test_square_and_piece_errors() -> None:
    with pytest.raises(NotationError, match="'e1' is not a square"):
        parse_square("e1")
    with pytest.raises(NotationError, match="'10' is not a piece"):
        parse_piece("10")


def test_auto_call_is_recorded_as_the_plain_placement() -> None:
    pos = parse_position("012./..../..../.... 3")
    assert str(pos.canonical(parse_turn("d4!"))) == "d4"
    assert pos.apply(parse_turn("d4!")).outcome is Outcome.WIN


def test_auto_win_still_rejects_a_give_of_a_piece_already_placed() -> None:
    pos = parse_position("012./..../..../.... 3")
    with pytest.raises(IllegalTurn, match="piece 1 is not available"):
        pos.apply(parse_turn("d41"))


# --- the module itself ---------------------------------------------------------------------------------------------


def test_the_rules_core_stands_alone() -> None:
    # notation builds on rules, never the other way round: importing, printing and playing need no notation.
    code = (
        "import sys\n"
        "from quarto_arena.protocol.rules import Position, TURNS\n"
        "p = Position.start().apply(TURNS[16][7]).apply(TURNS[9][14])\n"
        "print(repr(p), p)\n"
        "print(sorted(m for m in sys.modules if m.startswith('quarto_arena')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "Position('..../.7../..../.... e', standard, all attributes, auto claims) ..../.7../..../.... e"
    # errors: the exception root, two classes on the standard library (IllegalTurn derives from it).
    assert out[1] == (
        "['quarto_arena', 'quarto_arena.protocol', 'quarto_arena.protocol.errors', 'quarto_arena.protocol.rules']"
    )


def test_position_fields_have_names() -> None:
    pos = play("..../..../.e../012. 3", "d14", STRICT)
    assert Position._fields == ("variant", "occupied", "planes", "held", "available", "claimable", "outcome")
    assert pos.variant is STRICT and pos.claimable and pos.outcome is Outcome.ONGOING
    assert pos.occupied == 0b0000_0000_0010_1111 and pos.held == 4 and pos.hand == 4  # a1..d1 and b2
    assert pos.available == 0xFFFF & ~0b0100_0000_0001_1111
    assert Position.start().held == -1 and Position.start().hand is None
    assert str(pos) == format_position(pos) == "..../..../.e../0123 4"
