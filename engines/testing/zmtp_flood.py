"""Hostile ZeroMQ peer: speaks ZMTP 3.1 by hand to send what a ZeroMQ library never would.

``python -m quarto_arena.engines.testing.zmtp_flood (--listen | --connect) ENDPOINT MEGABYTES [SHAPE]``

With ``--listen`` it plays an engine's server (the arena connects out to it, SPEC §3.3); with ``--connect`` a bot
that connects in to the arena's ``--listen`` (SPEC §3.4, plain ZeroMQ: no keys). After the ZMTP handshake it sends
``MEGABYTES`` MB (0: without end) shaped as:

- ``multipart``: one message that never ends: 255-byte frames, each flagged "more" (libzmq buffers such a message
  whole, whatever ``ZMQ_MAXMSGSIZE`` and ``ZMQ_RCVHWM`` say);
- ``tiny``: the same with empty frames (two bytes on the wire each, a message slot each in libzmq's queue);
- ``huge``: one frame announced at 1 GiB, then its bytes.

Then it closes the connection and exits.
"""

from __future__ import annotations

import socket
import struct
import sys
import time

GREETING = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31


def ready(kind: bytes) -> bytes:
    body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", len(kind)) + kind
    return bytes((0x04, len(body))) + body


def main() -> None:
    """Connects or listens, shakes hands, floods (see the module's documentation)."""
    mode, endpoint, megabytes = sys.argv[1], sys.argv[2], float(sys.argv[3])
    shape = sys.argv[4] if len(sys.argv) > 4 else "multipart"
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    if mode == "--listen":
        server = socket.create_server((host, int(port)))
        print("listening", file=sys.stderr, flush=True)
        conn, _ = server.accept()
    else:
        conn = socket.create_connection((host, int(port)))
    conn.sendall(GREETING + ready(b"DEALER"))
    conn.settimeout(5)
    got = b""
    while len(got) < 64:  # the peer's greeting; its READY follows (and heartbeats): never read again
        chunk = conn.recv(4096)
        if not chunk:
            return
        got += chunk
    if shape == "huge":
        head = b"\x02" + struct.pack(">Q", 1 << 30)
        block = head + b"x" * ((1 << 20) - len(head))
        rest = b"x" * (1 << 20)
    else:
        frame = b"\x01\x00" if shape == "tiny" else b"\x01\xff" + b"x" * 255
        block = rest = frame * ((1 << 20) // len(frame))
    limit = megabytes * (1 << 20) if megabytes > 0 else float("inf")
    sent = 0
    conn.settimeout(None)
    try:
        while sent < limit:
            conn.sendall(block if sent == 0 else rest)
            sent += len(rest)
    except OSError:
        pass
    finally:
        print(f"sent {sent / (1 << 20):.0f} MB", file=sys.stderr)
        conn.close()
        time.sleep(0.1)


if __name__ == "__main__":
    main()
