"""Hostile client: holds half-open TCP connections to an arena's ``--listen``, and opens another for each one closed.

``python -m quarto_arena.engines.testing.half_open HOST:PORT SECONDS SOURCE=COUNT [SOURCE=COUNT ...]``

For each ``SOURCE=COUNT`` it keeps ``COUNT`` connections open from the local address ``SOURCE`` (127.0.0.2 and on
are this machine's too, on Linux: another address, as another machine behind its own NAT would be). A connection
sends nothing, ever (no ZMTP greeting): it only reads, and drops, what the server sends. Whenever the server closes
one, a new one takes its place at once, so the arena never sees fewer. After ``SECONDS`` (or at SIGTERM) it closes
them all and exits, printing on standard error ``opened N`` (connections opened in all); it prints ``holding`` once
as many connections as asked were accepted (connected, not merely begun: connecting to a server that does not listen
yet is refused a moment later), so that a test can start its honest bot while the flood is already on.
"""

from __future__ import annotations

import errno
import selectors
import signal
import socket
import sys
import time


class _Flood:
    """The connections held, and those to open again."""

    def __init__(self, target: tuple[str, int], wanted: dict[str, int]) -> None:
        self.target = target
        self.sel = selectors.DefaultSelector()
        self.owed = dict(wanted)  # connections to open now, per source address
        self.opened = 0
        self.wanted = sum(wanted.values())
        self.accepted = 0  # connections the server accepted (each one counted once)

    def hold(self, until: float) -> None:
        announced = False
        while time.monotonic() < until:
            for source, n in self.owed.items():
                for _ in range(n):
                    if self._open(source):
                        self.owed[source] -= 1
                        self.opened += 1
            if not announced and self.accepted >= self.wanted:
                print("holding", file=sys.stderr, flush=True)
                announced = True
            for key, events in self.sel.select(timeout=0.05):
                s = key.fileobj
                assert isinstance(s, socket.socket)
                if events & selectors.EVENT_WRITE:  # the connection is made, or was refused
                    if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                        self.accepted += 1
                        self.sel.modify(s, selectors.EVENT_READ, key.data)
                        continue
                    self.sel.unregister(s)
                    s.close()
                    self.owed[key.data] += 1
                    continue
                try:
                    alive = bool(s.recv(65536))
                except BlockingIOError:
                    continue
                except OSError:
                    alive = False
                if not alive:  # closed by the server (or refused): another one takes its place
                    self.sel.unregister(s)
                    s.close()
                    self.owed[key.data] += 1

    def _open(self, source: str) -> bool:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((source, 0))
            code = s.connect_ex(self.target)
        except OSError:
            s.close()
            return False
        if code not in (0, errno.EINPROGRESS):
            s.close()
            return False
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, source)
        return True

    def close(self) -> None:
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]


def main() -> None:
    """Holds the connections for the time given (see the module's documentation)."""
    if len(sys.argv) < 4:
        raise SystemExit("usage: half_open HOST:PORT SECONDS SOURCE=COUNT [SOURCE=COUNT ...]")
    host, _, port = sys.argv[1].removeprefix("tcp://").rpartition(":")
    until = time.monotonic() + float(sys.argv[2])
    flood = _Flood((host, int(port)), {src: int(n) for src, _, n in (a.partition("=") for a in sys.argv[3:])})
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # still says what it opened
    try:
        flood.hold(until)
    finally:
        flood.close()
        print(f"opened {flood.opened}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
