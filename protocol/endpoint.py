"""The ``--listen`` endpoint of a bot or a bridge, checked (:func:`parse_endpoint`): a small module of its own, since
the arena checks the same endpoints (``--listen`` of its runs) without loading the bot SDK."""

from __future__ import annotations

import ipaddress

from .errors import ExitStatus, QuartoError

__all__ = ["EndpointError", "parse_endpoint"]


class EndpointError(QuartoError, ValueError):
    """A ``--listen`` endpoint that cannot be served. The message is the problem, then what to do about it."""

    status = ExitStatus.USAGE
    reason = "endpoint"

    def __init__(self, problem: str, *, remedy: str = "", reason: str | None = None) -> None:
        super().__init__(f"{problem}; {remedy}" if remedy else problem, reason=reason)
        self.problem = problem
        """What is wrong, naming the endpoint."""
        self.remedy = remedy
        """What the user of a bot's command line can do about it ('' when nothing)."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_endpoint(text: str, *, allow_remote: bool = False) -> str:
    """Checks a ``--listen`` value and returns the endpoint to bind; raises :class:`EndpointError`.

    Accepted: ``tcp://HOST:PORT`` (HOST a loopback address unless ``allow_remote``), ``ipc://PATH``, or a bare
    port number, which means ``tcp://127.0.0.1:PORT``.
    """
    value = text.strip()
    if value.isdigit():
        value = f"tcp://127.0.0.1:{value}"
    if value.startswith("ipc://"):
        if len(value) == len("ipc://"):
            raise EndpointError(f"endpoint {text!r}: ipc:// needs a path")
        return value
    if not value.startswith("tcp://"):
        raise EndpointError(f"endpoint {text!r}: expected tcp://HOST:PORT, ipc://PATH or a port number")
    host, sep, port = value[len("tcp://") :].rpartition(":")
    if not sep or not host:
        raise EndpointError(f"endpoint {text!r}: expected tcp://HOST:PORT")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise EndpointError(f"endpoint {text!r}: port {port!r} is not a number in 1..65535")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not allow_remote and not _loopback(bare):
        raise EndpointError(
            f"endpoint {text!r}: {host} is not a loopback address",
            remedy="pass --allow-remote to accept other machines",
            reason="not_loopback",
        )
    if bare == "localhost":
        host = "127.0.0.1"  # libzmq binds addresses or interface names, not host names
    return f"tcp://{host}:{port}"
