"""Hostile client: holds half-open TCP connections to an arena's ``--listen``, and opens another for each one closed.

``python -m quarto_arena.engines.testing.half_open HOST:PORT SECONDS SOURCE=COUNT [SOURCE=COUNT ...]``

For each ``SOURCE=COUNT`` it keeps ``COUNT`` connections open from the local address ``SOURCE`` (127.0.0.2 and on
are this machine's too, on Linux: another address, as another machine behind its own NAT would be). A connection
sends nothing, ever (no ZMTP greeting): it only reads, and drops, what the server sends. Whenever the server closes
one, a new one takes its place at once, so the arena never sees fewer. After ``SECONDS`` it closes them all and
exits, printing on standard error ``opened N`` (connections opened in all); it prints ``holding`` once every
connection was opened a first time, so that a test can start its honest bot while the flood is already on.
"""

from __future__ import annotations

import errno
import selectors
import socket
import sys
import time


def _open(sel: selectors.BaseSelector, source: str, target: tuple[str, int]) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.bind((source, 0))
        code = s.connect_ex(target)
    except OSError:
        s.close()
        return False
    if code not in (0, errno.EINPROGRESS):
        s.close()
        return False
    sel.register(s, selectors.EVENT_READ, source)
    return True


def main() -> None:
    """Holds the connections for the time given (see the module's documentation)."""
    if len(sys.argv) < 4:
        raise SystemExit("usage: half_open HOST:PORT SECONDS SOURCE=COUNT [SOURCE=COUNT ...]")
    host, _, port = sys.argv[1].removeprefix("tcp://").rpartition(":")
    target = (host, int(port))
    until = time.monotonic() + float(sys.argv[2])
    wanted = {source: int(count) for source, _, count in (a.partition("=") for a in sys.argv[3:])}
    sel = selectors.DefaultSelector()
    owed = dict(wanted)  # connections to open now, per source
    opened = 0
    announced = False
    while time.monotonic() < until:
        for source, n in owed.items():
            for _ in range(n):
                if _open(sel, source, target):
                    owed[source] -= 1
                    opened += 1
        if not announced and not any(owed.values()):
            print("holding", file=sys.stderr, flush=True)
            announced = True
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            try:
                alive = bool(s.recv(65536))
            except BlockingIOError:
                continue
            except OSError:
                alive = False
            if not alive:  # closed by the server (or refused): another one takes its place
                sel.unregister(s)
                s.close()
                owed[key.data] += 1
    for key in list(sel.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    print(f"opened {opened}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
