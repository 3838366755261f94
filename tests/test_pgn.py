"""PGN writer and reader: round trips, PGN from other tools, and every kind of bad input giving a PgnError."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pgn_reference
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quarto_arena.arena.pgn import (
    PgnError,
    format_game,
    parse_movetext,
    pgn_text,
    read_games,
    read_results,
)
from quarto_arena.arena.records import EngineIdentity, GameRecord, Result, Termination, TurnRecord
from quarto_arena.arena.stats import ScoredGame

TAGS = {
    "Event": "club night",
    "Site": "localhost",
    "Date": "2026.01.02",
    "Round": "3",
    "White": "Greedy",
    "Black": "Random",
    "Variant": "standard",
    "TimeControl": "10+0.1",
    "Termination": "normal",
}


def write(tmp_path: Path, text: str | bytes, name: str = "games.pgn") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


# --------------------------------------------------------------------------------------------------------------
# Writer


def test_format_game_writes_roster_numbers_comments_and_result() -> None:
    text = format_game(
        {**TAGS, "StartPosition": "..../..../..../.... -"}, ["7", "b3e", "c1!"], "1-0", {0: "opening  give", 2: "wins"}
    )
    assert text == (
        '[Event "club night"]\n[Site "localhost"]\n[Date "2026.01.02"]\n[Round "3"]\n[White "Greedy"]\n'
        '[Black "Random"]\n[Result "1-0"]\n[Variant "standard"]\n[TimeControl "10+0.1"]\n[Termination "normal"]\n'
        '[StartPosition "..../..../..../.... -"]\n\n1. 7 {opening give} b3e 2. c1! {wins} 1-0\n'
    )


def test_format_game_fills_missing_roster_tags_and_escapes() -> None:
    text = format_game({"White": 'say "hi"', "Black": "back\\slash"}, [], "*")
    assert text.splitlines() == [
        '[Event "?"]',
        '[Site "?"]',
        '[Date "????.??.??"]',
        '[Round "?"]',
        '[White "say \\"hi\\""]',
        '[Black "back\\\\slash"]',
        '[Result "*"]',
        "",
        "*",
    ]


def test_long_movetext_is_wrapped_at_79_columns() -> None:
    text = format_game(TAGS, ["b3e", "c2a", "d4f"] * 20, "1/2-1/2", {5: "a long comment " * 8})
    movetext = text.split("\n\n")[1]
    assert all(len(line) <= 79 for line in movetext.splitlines()) and len(movetext.splitlines()) > 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.from_regex(r"[a-z]{1,90}", fullmatch=True), min_size=1, max_size=40), st.data())
def test_movetext_is_filled_greedily_and_a_long_word_stands_alone(words: list[str], data: st.DataObject) -> None:
    note = st.sampled_from(["", "x", "a long one " * 9])
    comments = data.draw(st.dictionaries(st.integers(-1, len(words) - 1), note))
    movetext = format_game({}, words, "*", comments).split("\n\n")[1].rstrip("\n")
    lines = movetext.split("\n")
    assert " ".join(lines).split(" ") == movetext.split()  # nothing lost, one space between words
    for line, following in zip(lines, [*lines[1:], None], strict=True):
        assert len(line) <= 79 or " " not in line  # only a lone word is longer than the width
        if following is not None:  # greedy: the next line's first word would not have fitted
            assert len(line) + 1 + len(following.split(" ")[0]) > 79


@pytest.mark.parametrize(
    ("turns", "result", "comments", "tags", "message"),
    [
        (["7"], "2-0", None, {}, "result"),
        (["b3 e"], "1-0", None, {}, "cannot be a PGN token"),
        (["1."], "1-0", None, {}, "cannot be a PGN token"),
        (["1-0"], "1-0", None, {}, "cannot be a PGN token"),
        (["a1", "b2", "12.c3"], "1-0", None, {}, "turn 3: '12.c3' cannot be a PGN token"),
        (["a1", ""], "1-0", None, {}, "turn 2: '' cannot be a PGN token"),
        (["a1", "b;2"], "1-0", None, {}, "turn 2"),
        (["7"], "1-0", {0: "a } b"}, {}, "contains '}'"),
        (["7"], "1-0", {3: "x"}, {}, "not a turn index"),
        (["7"], "1-0", None, {"Result": "0-1"}, "contradicts"),
        (["7"], "1-0", None, {"Bad Name": "x"}, "not a PGN tag name"),
        (["7"], "1-0", None, {"Event": "two\nlines"}, "spans lines"),
    ],
)
def test_format_game_refuses_what_would_not_read_back(
    turns: list[str], result: str, comments: dict[int, str] | None, tags: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        format_game(tags, turns, result, comments)


# --------------------------------------------------------------------------------------------------------------
# Round trip

TOKEN = st.one_of(
    st.from_regex(r"[0-9a-f]", fullmatch=True),
    st.from_regex(r"[a-d][1-4][0-9a-f]?!?", fullmatch=True),
    st.just("!"),
)
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
COMMENT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="}"), max_size=30)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    st.lists(TOKEN, max_size=20),
    st.sampled_from(["1-0", "0-1", "1/2-1/2", "*"]),
    st.dictionaries(st.sampled_from(["Event", "Site", "White", "Black", "Opening", "Termination"]), TEXT),
    st.data(),
)
def test_write_then_read_gives_the_game_back(
    turns: list[str], result: str, tags: dict[str, str], data: st.DataObject
) -> None:
    comments = data.draw(st.dictionaries(st.integers(-1, len(turns) - 1), COMMENT, max_size=4))
    text = format_game(tags, turns, result, comments)
    # Through the real reader, twice in one file; hypothesis cannot share pytest's tmp_path between examples.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "one.pgn"
        path.write_text(text + "\n" + text, encoding="utf-8")
        games = list(read_games(path))
    assert len(games) == 2
    game = games[0]
    assert game.result == result and game.tags["Result"] == result
    for name, value in tags.items():
        assert game.tags[name] == value
    read_turns, read_comments = parse_movetext(game.movetext)
    assert read_turns == turns
    assert read_comments == {i: " ".join(c.split()) for i, c in comments.items()}
    assert games[1].tags == game.tags and games[1].line > game.line


# --------------------------------------------------------------------------------------------------------------
# Reading PGN from anywhere


def test_small_pgn_from_the_vectors() -> None:
    results = read_results([Path(__file__).parent / "data" / "rating" / "small.pgn"])
    assert len(results.games) == 40 and results.unfinished == 0
    assert results.games[0] == ScoredGame("Random", "Greedy", 0.0)
    assert results.games[2] == ScoredGame("Random", "Greedy", 0.5)
    assert results.games[-1] == ScoredGame("MCTS1k", "MinimaxD4", 0.0)


def test_reader_copes_with_what_other_tools_write(tmp_path: Path) -> None:
    text = (
        "\ufeff% an escape line from some exporter\r\n"
        '[Event "chess"]\r\n[White "Carlsen, Magnus"]\r\n[Black "Caruana, Fabiano"]\r\n[Result "1-0"]\r\n'
        '[WhiteElo "2830"]\r\n\r\n'
        "1. e4 {a comment\r\n"
        '[White "inside a comment, not a tag"]\r\n'
        "\r\n"
        "still the comment} e5 ; a line comment with a { that opens nothing\r\n"
        "2. Nf3 $1 Nc6 1-0\r\n"
        # No blank line before the next game; this game has no movetext at all.
        '[White "A"]\n[Black "B"]\n[Result "1/2-1/2"]\n'
        # Blank line, then tags: a new game again.
        '\n[White "C"]\n[Black "D"]\n[Result "*"]\n\n*\n'
        # A repeated tag name without any blank line starts a game too.
        '[White "E"]\n[Black "F"]\n[Result "0-1"]\n[White "G"]\n[Black "H"]\n[Result "1-0"]\n'
    )
    path = write(tmp_path, text)
    games = list(read_games(path))
    assert [(g.tags["White"], g.result) for g in games] == [
        ("Carlsen, Magnus", "1-0"),
        ("A", "1/2-1/2"),
        ("C", "*"),
        ("E", "0-1"),
        ("G", "1-0"),
    ]
    assert games[0].tags["WhiteElo"] == "2830" and games[0].line == 2
    turns, comments = parse_movetext(games[0].movetext)
    assert turns == ["e4", "e5", "Nf3", "Nc6"]
    assert comments[0] == '{a comment [White "inside a comment, not a tag"] still the comment}'[1:-1]
    results = read_results([path, path])
    assert results.unfinished == 2
    assert results.games[:2] == [ScoredGame("Carlsen, Magnus", "Caruana, Fabiano", 1.0), ScoredGame("A", "B", 0.5)]
    assert len(results.games) == 8


def test_empty_file_has_no_games(tmp_path: Path) -> None:
    assert list(read_games(write(tmp_path, ""))) == []
    assert read_results([write(tmp_path, "\n\n% nothing\n", "blank.pgn")]).games == []


# --------------------------------------------------------------------------------------------------------------
# Bad input

GOOD = '[White "A"]\n[Black "B"]\n[Result "1-0"]\n\n1. 7 b3e 1-0\n\n'


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        (GOOD + '[White "A"]\n[Black "B"]\n\n1. 7 1-0\n', 7, "no Result tag"),
        (GOOD + '[White "A"]\n[Black "B"]\n[Result "2-0"]\n', 9, "unknown result '2-0'"),
        (GOOD + '[White "A"]\n[Black "B"]\n[Result 1-0]\n', 9, "malformed tag pair"),
        (GOOD + '[White "A"\n', 7, "malformed tag pair"),
        (GOOD + '[White "A"]\n[Black "B"]\n[Result "1-0"]\n\n1. 7 {never closed\nb3e 1-0\n', 11, "never closed"),
        (GOOD.encode() + b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 9, "binary file"),
        (GOOD.encode() + b'[White "Caf\xe9"]\n', 7, "invalid UTF-8"),
        ("1. e4 e5 1-0\n", 1, "no Result tag"),
        ('[Black "B"]\n[Result "1-0"]\n', 1, "no White tag"),
    ],
)
def test_bad_input_raises_pgn_error_naming_file_and_line(
    tmp_path: Path, content: str | bytes, line: int, problem: str
) -> None:
    path = write(tmp_path, content)
    with pytest.raises(PgnError) as caught:
        read_results([path])
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: ") and problem in message
    assert "\n" not in message
    assert (caught.value.path, caught.value.line) == (str(path), line)


def test_missing_file_raises_pgn_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pgn"
    with pytest.raises(PgnError, match=r"nope\.pgn: cannot open: No such file"):
        read_results([missing])
    with pytest.raises(PgnError, match="cannot open"):
        list(read_games(tmp_path))  # a directory


@pytest.mark.parametrize(
    ("broken", "line", "problem"),
    [
        ('[White "A"]\n[Black "B"]\n\n1. 7 {a comment\nover two lines} 1-0\n', 7, "no Result tag"),
        ('[White "A"]\n[Black "B"]\n[Result "2-0"]\n\n1. 7 1-0\n', 9, "unknown result '2-0'"),
        ('[White "A"\n[Black "B"]\n[Result "1-0"]\n\n1. 7 {a [tag-like] comment} 1-0\n', 7, "malformed tag pair"),
        ('[White "A"]\n[Black "B"]\n[Result "1-0"]\n[Site oops]\n\n1. 7 1-0\n', 10, "malformed tag pair"),
    ],
)
def test_skip_passes_over_a_broken_game_and_reads_the_others(
    tmp_path: Path, broken: str, line: int, problem: str
) -> None:
    after = '[White "C"]\n[Black "D"]\n[Result "0-1"]\n\n1. 8 0-1\n'
    path = write(tmp_path, GOOD + broken + "\n" + after)
    skipped: list[PgnError] = []
    games = list(read_games(path, skip=skipped.append))
    assert [(g.tags["White"], g.result) for g in games] == [("A", "1-0"), ("C", "0-1")]
    assert games[1].movetext == "1. 8 0-1"
    assert len(skipped) == 1 and skipped[0].line == line and problem in str(skipped[0])
    with pytest.raises(PgnError):  # without skip, the first problem raises, as ever
        list(read_games(path))


def test_skip_still_raises_for_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.encode() + b'[White "Caf\xe9"]\n')
    with pytest.raises(PgnError, match="invalid UTF-8"):
        list(read_games(path, skip=lambda e: None))
    unclosed = write(tmp_path, GOOD + '[White "A"]\n[Result "1-0"]\n\n1. 7 {never closed\n')
    skipped: list[PgnError] = []
    assert [g.tags["White"] for g in read_games(unclosed, skip=skipped.append)] == ["A"]
    assert len(skipped) == 1 and "never closed" in str(skipped[0])


def test_read_games_checks_results_too(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + '[White "A"]\n[Result "draw"]\n')
    games = read_games(path)
    assert next(games).result == "1-0"  # streamed: the first game arrives before the bad one is seen
    with pytest.raises(PgnError, match=":8: unknown result 'draw'"):
        next(games)


def test_tag_values_are_unescaped_in_one_pass_and_stray_quotes_are_kept(tmp_path: Path) -> None:
    text = '[Event "Rated "Blitz" game"]\n[Site "a \\\\\\" b \\\\"]\n[White  "A" ]\n[Black "B"]\n[Result "1-0"]\n'
    game = next(read_games(write(tmp_path, text)))
    assert game.tags == {
        "Event": 'Rated "Blitz" game',
        "Site": 'a \\" b \\',
        "White": "A",
        "Black": "B",
        "Result": "1-0",
    }


# --------------------------------------------------------------------------------------------------------------
# The writer against a plain reference (tests/pgn_reference.py): a run's records, and odd tags, tokens and comments

ODD_TEXT = st.sampled_from(
    ["", " ", "bot1 wins", "  two  spaces ", "a}b", "tab\there", "line\nend", 'say "hi"', "b\\s", "end ", " start"]
)
# White space that only str.split knows, a control character that is no white space, a letter outside ASCII.
ODD_TEXT = st.one_of(ODD_TEXT, st.sampled_from(["no\xa0break", "unit\x1fsep", "bell\x07", "cr\rx", "é"]))
ODD_SCORE = st.sampled_from([None, "", "win 3", "draw", " value -40 ", "lose}", "\t", "value  7\n"])
ODD_TOKEN = st.one_of(
    TOKEN,
    st.sampled_from(
        ["", "1-0", "*", "b3 e", "12.c3", "3...", "x\0y", "a;b", "b3\te", "a\xa0b", "c{", "d}", "é", "a.b"]
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.one_of(TOKEN, TOKEN, TOKEN, ODD_TOKEN), st.integers(0, 99999), ODD_SCORE), max_size=18),
    st.integers(0, 4),
    ODD_TEXT,
    st.sampled_from(list(Result)),
    st.sampled_from(["bot1", 'q"uote', "back\\slash", "new\nline", "cr\rx"]),
    st.sampled_from(["startpos", "some position"]),
    st.lists(
        st.builds(
            EngineIdentity,
            st.sampled_from([None, "E 1.0", 'E "x"']),
            st.sampled_from([None, "me"]),
            st.just(1),
            st.sampled_from(["", "/bin/e"]),
            st.sampled_from([{}, {"Seed": "1", "A": "b c"}]),
        ),
        max_size=2,
    ),
)
def test_pgn_text_writes_what_the_reference_writes(
    turns: list[tuple[str, int, str | None]],
    book: int,
    detail: str,
    result: Result,
    name: str,
    start: str,
    engines: list[EngineIdentity],
) -> None:
    record = _game(name, turns, book, detail, result, start, engines, "2026-11-26T20:56:11+00:00")
    try:
        expected: str | None = pgn_reference.pgn_text(record, "ev")
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError):
            pgn_text(record, "ev")
    else:
        assert pgn_text(record, "ev") == expected


def _game(
    first: str,
    turns: list[tuple[str, int, str | None]],
    book: int,
    detail: str,
    result: Result,
    start: str,
    engines: list[EngineIdentity],
    started: str,
    round: int = 1,
) -> GameRecord:
    """A game of ``first`` against bot2 with these turns (the first ``book`` of them the opening), as game 7."""
    return GameRecord(
        first,
        "bot2",
        result,
        Termination.NORMAL,
        detail=detail,
        start=start,
        opening=tuple(t for t, _, _ in turns[:book]),
        turns=tuple(TurnRecord(t, ms, s) for t, ms, s in turns),
        game_id=7,
        round=round,
        started=started,
        engines=tuple(engines),
    )


IDENTITY = st.builds(
    EngineIdentity,
    st.sampled_from([None, "", "E 1.0", "Greedy C 1.0"]),
    st.sampled_from([None, "", "me"]),
    st.just(1),
    st.sampled_from(["", "/bin/e", "/tmp/quarto_bot"]),
    st.sampled_from([{}, {"Seed": "1"}, {"Seed": "2", "A": "b c"}]),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(TOKEN, st.integers(0, 99999), st.sampled_from([None, "win 3", "draw", "value -40"])),
        min_size=1,
        max_size=18,
    ),
    st.integers(0, 4),
    st.sampled_from(["", "bot1 completes an alignment", "draw: the board is full", "x}y"]),
    st.sampled_from(list(Result)),
    st.sampled_from(["startpos", "some position"]),
    st.lists(IDENTITY, max_size=3),
    st.sampled_from(["", "2026-11-26T20:56:11+00:00"]),
)
def test_pgn_text_writes_a_runs_games_as_the_reference_does(
    turns: list[tuple[str, int, str | None]],
    book: int,
    detail: str,
    result: Result,
    start: str,
    engines: list[EngineIdentity],
    started: str,
) -> None:
    # A run's games (tokens as the referee records them, plain names and identities), held to the reference writer
    # on its own, every tag, comment and the game's ending; and with a value to escape, anywhere.
    record = _game("bot1", turns, book, detail, result, start, engines, started, round=3)
    text = pgn_text(record, "ev")
    assert text == pgn_reference.pgn_text(record, "ev")
    # Another Site (what the ladder publishes): that line differs, nothing else.
    for site in ("?", 'a "b"'):
        expected = text.replace(
            pgn_reference.tag_line("Site", pgn_reference.SITE), pgn_reference.tag_line("Site", site), 1
        )
        assert pgn_text(record, "ev", site) == expected
    quoted = EngineIdentity('E "1"', source="/bin/e")
    for odd in (replace(record, first='q"uote'), replace(record, engines=(*engines[:1], quoted))):
        assert pgn_text(odd, "ev") == pgn_reference.pgn_text(odd, "ev")


ODD_NAME = st.sampled_from(["Event", "Result", "White", "Annotator", "Bad Name", "", "a+b", "x\ny", "é"])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(TOKEN, ODD_TOKEN), max_size=18),
    st.sampled_from(["1-0", "0-1", "1/2-1/2", "*", "2-0"]),
    st.dictionaries(ODD_NAME, st.one_of(ODD_TEXT, st.just("1-0")), max_size=5),
    st.data(),
)
def test_format_game_writes_what_the_reference_writes(
    turns: list[str], result: str, tags: dict[str, str], data: st.DataObject
) -> None:
    text = st.one_of(ODD_TEXT, ODD_SCORE.filter(bool))
    # Half the games with one comment a turn (as a run writes them), the others with comments anywhere.
    comments = data.draw(
        st.one_of(
            st.lists(text, min_size=len(turns), max_size=len(turns)).map(lambda texts: dict(enumerate(texts))),
            st.dictionaries(st.integers(-2, 19), text, max_size=8),
        )
    )
    try:
        expected: str | None = pgn_reference.format_game(tags, turns, result, comments)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError):
            format_game(tags, turns, result, comments)
    else:
        assert format_game(tags, turns, result, comments) == expected
