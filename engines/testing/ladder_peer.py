"""Hostile members of a ladder: clients of an arena's ``--listen`` (SPEC §3.4, CurveZMQ) written by hand with pyzmq,
to do what the SDK and the bridge never would.

``python -m quarto_arena.engines.testing.ladder_peer stall ENDPOINT --key F --server-key F --name N [--slots K]
[--leave-after SECONDS]``
    Says hello with K slots (16 by default), answers every ``begin`` with nothing (never ``uqiok``: each game stalls
    until the arena's start-up deadline), and ``quit`` with ``ready`` so that it is never cut for a slot not ready.
    With ``--leave-after``, it disconnects that many seconds after its first ``begin`` (just before the deadline)
    and exits. Prints one line per session begun and ended on stdout: ``begin K``, ``quit K``.

``python -m quarto_arena.engines.testing.ladder_peer dodge ENDPOINT --key F --server-key F --name N
[--after K]``
    Plays its games correctly on one slot (the testing bots' :class:`MinimalBot`), and disconnects at once when the
    arena ends its K-th session (1 by default): the first game of its first pair is over, the second is due.

``python -m quarto_arena.engines.testing.ladder_peer rename ENDPOINT --key F --server-key F --name N [--slots K]``
    Plays its games correctly on K slots (4 by default), with another ``id name`` in every session: a new version of
    the bot each game.

``python -m quarto_arena.engines.testing.ladder_peer register ENDPOINT --server-key F --count N --per-minute R
[--prefix P] [--stay SECONDS] [--wait SECONDS]``
    N connections at R per minute, each with a key of its own made on the spot, saying hello as ``P0``, ``P1``...,
    each closed once the arena answers (``welcome`` or ``refused``), or after ``--wait`` seconds (5). Prints a JSON
    line at the end: ``{"welcome": W, "refused": R, "silent": S, "reasons": {reason: count}}``. With ``--stay``
    the welcomed connections stay open that long before they close (answering nothing). It cannot hang: past twice
    the time its pace and waits allow (plus 30 s) it prints every thread's stack on stderr and exits with 1.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import time
from typing import Any

import zmq
import zmq.auth
from quarto_arena.protocol.connect import (
    CONTROL,
    Begin,
    Hello,
    Ready,
    Refused,
    Welcome,
    format_channel,
    format_control,
    parse_channel,
    parse_control,
)

from ._base import MinimalBot


class _Session(MinimalBot):
    """A correct engine whose lines go to one slot of the connection."""

    name = "Dodger"

    def __init__(self, sock: Any, slot: int) -> None:
        super().__init__()
        self._sock = sock
        self._channel = format_channel(slot)

    def send(self, line: str) -> None:
        """To the arena, on the slot's channel."""
        self._sock.send_multipart([self._channel, line.encode()])

    def on_quit(self) -> None:
        """The session is over (the connection stays)."""


def _socket(context: zmq.Context[Any], endpoint: str, secret: tuple[bytes, bytes], server: bytes) -> Any:
    sock: Any = context.socket(zmq.DEALER)
    sock.linger = 0
    sock.curve_publickey, sock.curve_secretkey = secret
    sock.curve_serverkey = server
    sock.connect(endpoint)
    return sock


def _hello(args: argparse.Namespace, slots: int) -> tuple[zmq.Context[Any], Any]:
    """Connected with the key of ``--key`` and said hello."""
    public, secret = zmq.auth.load_certificate(args.key)
    server, _ = zmq.auth.load_certificate(args.server_key)
    assert secret is not None
    context: zmq.Context[Any] = zmq.Context()
    sock = _socket(context, args.endpoint, (public, secret), server)
    sock.send_multipart([CONTROL, format_control(Hello(args.name, slots)).encode()])
    return context, sock


def stall(args: argparse.Namespace) -> None:
    """The staller (see the module's documentation)."""
    context, sock = _hello(args, args.slots)
    first_begin: float | None = None
    while True:
        if args.leave_after is not None and first_begin is not None:
            left = first_begin + args.leave_after - time.monotonic()
            if left <= 0:
                sock.close(linger=0)
                context.term()
                return
            if not sock.poll(int(left * 1000) + 1):
                continue
        channel, line = sock.recv_multipart()
        slot = parse_channel(channel)
        if slot is None:
            message = parse_control(line.decode())
            if isinstance(message, Begin):
                print(f"begin {message.slot}", flush=True)
                if first_begin is None:
                    first_begin = time.monotonic()
            elif isinstance(message, Refused):
                print(f"refused {message.text}", flush=True)
                return
        elif line == b"quit":
            print(f"quit {slot}", flush=True)
            sock.send_multipart([CONTROL, format_control(Ready(slot)).encode()])
        # uqi, isready, newgame...: never answered


def dodge(args: argparse.Namespace) -> None:
    """The dodger (see the module's documentation)."""
    _play(args, 1, args.after, rename=False)


def rename(args: argparse.Namespace) -> None:
    """The renamer (see the module's documentation)."""
    _play(args, args.slots, None, rename=True)


def _play(args: argparse.Namespace, slots: int, after: int | None, *, rename: bool) -> None:
    """Plays every session correctly on ``slots`` slots (``rename``: with a new ``id name`` each); gone at the end
    of session number ``after`` (None: never)."""
    context, sock = _hello(args, slots)
    sessions = 0
    playing: dict[int, _Session] = {}
    while True:
        channel, line = sock.recv_multipart()
        slot = parse_channel(channel)
        if slot is None:
            message = parse_control(line.decode())
            if isinstance(message, Begin):
                sessions += 1
                playing[message.slot] = session = _Session(sock, message.slot)
                if rename:
                    session.name = f"Renamer {sessions}"
            elif isinstance(message, Refused):
                print(f"refused {message.text}", flush=True)
                return
        elif line == b"quit":
            playing.pop(slot, None)
            if after is not None and sessions >= after:
                print(f"gone after session {sessions}", flush=True)
                sock.close(linger=0)
                context.term()
                return
            sock.send_multipart([CONTROL, format_control(Ready(slot)).encode()])
        elif slot in playing:
            playing[slot].handle(line.decode())


def register(args: argparse.Namespace) -> None:
    """The flood of registrations (see the module's documentation)."""
    # A tool a test waits on states its own hang (once, at load 7, a test ran past pytest's 300 s here, not seen
    # again): where it stood, from its stacks, rather than a timeout of the test that waits.
    allowed = args.count * (60.0 / args.per_minute + args.wait) + args.stay
    faulthandler.dump_traceback_later(2 * allowed + 30, exit=True)
    server, _ = zmq.auth.load_certificate(args.server_key)
    context: zmq.Context[Any] = zmq.Context()
    counts = {"welcome": 0, "refused": 0, "silent": 0}
    reasons: dict[str, int] = {}
    kept: list[Any] = []
    began = time.monotonic()
    for i in range(args.count):
        pause = began + i * 60.0 / args.per_minute - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        sock = _socket(context, args.endpoint, zmq.curve_keypair(), server)
        # A DEALER's send blocks while it has no connection to queue on: after a refused handshake libzmq drops the
        # connection and makes another, and a send in between waited forever (r-2, the closed case: its stack).
        sock.sndtimeo = int(args.wait * 1000)
        answer = None
        try:
            sock.send_multipart([CONTROL, format_control(Hello(f"{args.prefix}{i}", 1)).encode()])
        except zmq.Again:
            counts["silent"] += 1
            sock.close(linger=0)
            continue
        if sock.poll(int(args.wait * 1000)):
            _, line = sock.recv_multipart()
            answer = parse_control(line.decode())
        if isinstance(answer, Welcome):
            counts["welcome"] += 1
            if args.stay:
                kept.append(sock)
                continue
        elif isinstance(answer, Refused):
            counts["refused"] += 1
            reason = answer.text.split(":")[0]
            reasons[reason] = reasons.get(reason, 0) + 1
        else:
            counts["silent"] += 1
        sock.close(linger=0)
    if kept:
        time.sleep(args.stay)
        for sock in kept:
            sock.close(linger=0)
    context.term()
    print(json.dumps({**counts, "reasons": reasons}), flush=True)


def main() -> None:
    """Runs the peer named on the command line."""
    parser = argparse.ArgumentParser(prog="ladder_peer")
    kinds = parser.add_subparsers(dest="kind", required=True)

    def keyed(kind: str) -> argparse.ArgumentParser:
        """A peer that connects with a key of its own under a name."""
        k = kinds.add_parser(kind)
        k.add_argument("endpoint")
        for flag in ("--key", "--server-key", "--name"):
            k.add_argument(flag, required=True)
        return k

    s = keyed("stall")
    s.add_argument("--slots", type=int, default=16)
    s.add_argument("--leave-after", type=float)
    keyed("dodge").add_argument("--after", type=int, default=1)
    keyed("rename").add_argument("--slots", type=int, default=4)
    r = kinds.add_parser("register")
    r.add_argument("endpoint")
    r.add_argument("--server-key", required=True)
    r.add_argument("--count", type=int, required=True)
    r.add_argument("--per-minute", type=float, required=True)
    r.add_argument("--prefix", default="newbot")
    r.add_argument("--stay", type=float, default=0.0)
    r.add_argument("--wait", type=float, default=5.0)
    args = parser.parse_args()
    try:
        {"stall": stall, "dodge": dodge, "rename": rename, "register": register}[args.kind](args)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
