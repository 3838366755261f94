"""The connect-in control lines (SPEC §3.4): round trips and precise refusals, without any socket."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from quarto_arena.protocol.connect import (
    Begin,
    Bye,
    ConnectError,
    Control,
    Ended,
    Goodbye,
    Hello,
    Kill,
    Leaving,
    Ready,
    Refused,
    Welcome,
    format_channel,
    format_control,
    parse_channel,
    parse_control,
)

names = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=64)
slots = st.integers(1, 10**6)
texts = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=100).map(str.strip)
controls = st.one_of(
    st.builds(Hello, names, slots, st.integers(0, 99)),
    st.builds(Welcome, slots, st.integers(0, 99)),
    st.builds(Refused, texts.filter(bool)),
    st.builds(Bye, texts.filter(bool)),
    st.builds(Begin, slots),
    st.builds(Ready, slots),
    st.builds(Ended, slots, texts),
    st.builds(Kill, slots),
    st.just(Leaving()),
    st.builds(Goodbye, texts),
)


@given(controls)
def test_every_control_line_parses_back(message: Control) -> None:
    assert parse_control(format_control(message)) == message


@given(st.one_of(st.none(), slots))
def test_channels_round_trip(slot: int | None) -> None:
    assert parse_channel(format_channel(slot)) == slot


def test_the_lines_as_spec_writes_them() -> None:
    assert format_control(Hello("alice", 2)) == "hello version 1 slots 2 name alice"
    assert format_control(Welcome(2)) == "welcome version 1 slots 2"
    assert format_control(Ended(1)) == "ended 1"
    assert parse_control("ended 2 exit code 1") == Ended(2, "exit code 1")
    assert parse_control("refused it holds the key of 'bob'") == Refused("it holds the key of 'bob'")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "empty control line"),
        ("hello name alice slots 1 version 1", "expected 'hello version VERSION slots SLOTS name NAME'"),
        ("hello version 1 slots two name alice", "slots 'two' is not a number"),
        ("hello version 1 slots 1 name", "expected 'hello version"),
        ("welcome version 1 slots 1 extra", "expected 'welcome version VERSION slots SLOTS'"),
        ("begin 0", "slot 0 out of range"),
        ("ready", "expected 'ready SLOT'"),
        ("ready 1 2", "expected 'ready SLOT'"),
        ("ended", "expected 'ended SLOT [TEXT]'"),
        ("kill", "expected 'kill SLOT'"),
        ("leaving now", "expected 'leaving'"),
        ("frobnicate", "unknown control line 'frobnicate'"),
        ("bye " + "x" * 5000, "longer than 4096 bytes"),
    ],
)
def test_bad_control_lines_say_what_is_wrong(line: str, message: str) -> None:
    with pytest.raises(ConnectError, match=re.escape(message)):
        parse_control(line)


@pytest.mark.parametrize("frame", [b"0", b"01", b"-1", b"x", b"1 ", b"123456789"])
def test_bad_channels_are_refused(frame: bytes) -> None:
    with pytest.raises(ConnectError, match="neither empty nor a slot number"):
        parse_channel(frame)
