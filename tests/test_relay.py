"""The bridge's relay (``--connect``): lines that come in bursts cross it whole and in order, each line still held to
the UQI limit; and the loop under it reads a ZeroMQ socket whose descriptor's signal was taken by a send. Real
processes and real ZeroMQ sockets: the arena's side is a bare ROUTER on loopback, driven by the test."""

from __future__ import annotations

import select
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from procs import free_port, tied
from quarto_arena.protocol.slots import Loop
from quarto_arena.protocol.uqi import MAX_LINE_BYTES

BRIDGE = [sys.executable, "-m", "quarto_arena.protocol.bridge"]
LINES = 300

# Echoes every line it is sent (so the test sees what reached it, and in what order); on "go" it writes a burst in
# one write, on "go long" a line over the limit between two ordinary ones.
ENGINE = f"""
import os, sys
def out(text):
    os.write(1, text.encode())
for line in sys.stdin:
    line = line.rstrip("\\n")
    if line == "uqi 1":
        out("id name Echo\\nuqiok 1\\n")
    elif line == "go":
        out("".join(f"info string burst {{k}}\\n" for k in range({LINES})) + "turn a1\\n")
    elif line == "go long":
        out("info string before\\n" + "x" * {MAX_LINE_BYTES + 1} + "\\ninfo string after\\n")
    elif line == "quit":
        break
    else:
        out(f"info string got {{line}}\\n")
"""


class Arena:
    """A bare ROUTER that a bridge connects to: it welcomes the bridge and begins a session on slot 1."""

    def __init__(self) -> None:
        self.context: zmq.Context[Any] = zmq.Context()
        self.sock: Any = self.context.socket(zmq.ROUTER)
        self.sock.linger = 0
        self.endpoint = f"tcp://127.0.0.1:{free_port()}"
        self.sock.bind(self.endpoint)
        self.rid = b""

    def recv(self) -> tuple[bytes, bytes]:
        assert self.sock.poll(30_000), "nothing from the bridge within 30 s"
        rid, channel, line = self.sock.recv_multipart()
        self.rid = rid
        return channel, line

    def send(self, channel: bytes, line: str) -> None:
        self.sock.send_multipart([self.rid, channel, line.encode()])

    def until(self, wanted: bytes) -> list[tuple[bytes, bytes]]:
        """What the bridge sends, up to and with the first message whose line is ``wanted``."""
        got = []
        while not got or got[-1][1] != wanted:
            got.append(self.recv())
        return got

    def close(self) -> None:
        self.sock.close()
        self.context.term()


@pytest.fixture
def bridged(tmp_path: Path) -> Iterator[Arena]:
    import subprocess

    engine = tmp_path / "echo.py"
    engine.write_text(textwrap.dedent(ENGINE))
    arena = Arena()
    argv = [*BRIDGE, "--connect", arena.endpoint, "--name", "echo", "--", sys.executable, str(engine)]
    proc = subprocess.Popen(tied(argv), start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        assert arena.recv() == (b"", b"hello version 1 slots 1 name echo")
        arena.send(b"", "welcome version 1 slots 1")
        arena.send(b"", "begin 1")
        arena.send(b"1", "uqi 1")
        assert arena.until(b"uqiok 1") == [(b"1", b"id name Echo"), (b"1", b"uqiok 1")]
        yield arena
    finally:
        proc.kill()
        proc.wait()
        arena.close()


def test_a_burst_of_lines_crosses_whole_and_in_order_both_ways(bridged: Arena) -> None:
    """The arena's lines sent back to back reach the engine in order (the bridge reads every waiting message and writes
    them at once), and an engine's burst written in one write reaches the arena line by line, in order."""
    for k in range(LINES):
        bridged.send(b"1", f"echo {k}")
    bridged.send(b"1", "go")
    got = bridged.until(b"turn a1")
    assert {channel for channel, _ in got} == {b"1"}
    lines = [line.decode() for _, line in got]
    assert lines == [f"info string got echo {k}" for k in range(LINES)] + [
        f"info string burst {k}" for k in range(LINES)
    ] + ["turn a1"]


def test_a_line_over_the_limit_in_a_burst_ends_the_session_after_the_lines_before_it(bridged: Arena) -> None:
    """Each line of a burst is held to the limit: the one before it is relayed, the long one ends the session (the
    arena is told why), and nothing after it reaches the arena."""
    bridged.send(b"1", "go long")
    got = bridged.until(f"ended 1 the engine wrote a line longer than {MAX_LINE_BYTES} bytes".encode())
    assert got == [
        (b"1", b"info string before"),
        (b"", f"ended 1 the engine wrote a line longer than {MAX_LINE_BYTES} bytes".encode()),
    ]
    bridged.send(b"1", "quit")
    assert bridged.recv() == (b"", b"ready 1")  # a fresh engine: the long line was the old one's last


def test_the_loop_reads_a_socket_whose_signal_a_send_took() -> None:
    """The loop watches a ZeroMQ socket through its descriptor, which signals a change once. ZeroMQ takes that signal
    in itself whenever it processes the socket's commands (a send may, as a look at EVENTS does): the message then
    waits, and the descriptor shows nothing. ``Loop.sent`` has the reader run again before the loop waits; a
    message that waits when the reader is added is read too."""
    context: zmq.Context[Any] = zmq.Context()
    a, b = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
    a.bind("inproc://loop-edge")
    b.connect("inproc://loop-edge")
    loop = Loop()
    got: list[bytes] = []

    def read() -> None:
        while a.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            got.append(a.recv())

    fd = a.getsockopt(zmq.FD)
    try:
        b.send(b"before")
        assert a.getsockopt(zmq.EVENTS) & zmq.POLLIN  # its signal taken before the loop hears of the socket
        loop.add_reader(a, read)
        loop.run_once(1.0)
        assert got == [b"before"]
        b.send(b"after")
        assert a.getsockopt(zmq.EVENTS) & zmq.POLLIN  # as a send that processes the socket's commands would
        assert select.select([fd], [], [], 0.2)[0] == []  # so the descriptor shows nothing: the hazard is real
        a.send(b"reply")
        loop.sent(a)
        loop.run_once(1.0)
        assert got == [b"before", b"after"]
    finally:
        loop.close()
        a.close(linger=0)
        b.close(linger=0)
        context.term()
