"""The bot SDK: write a Quarto bot as one function or a small class; this module does all the UQI work.

The smallest bot is a function::

    from quarto_arena.protocol.bot import SearchContext, run
    from quarto_arena.protocol.rules import Position, Turn

    def choose(position: Position, ctx: SearchContext) -> Turn:
        return position.legal_turns()[0]

    if __name__ == "__main__":
        run(choose)

A richer bot subclasses :class:`Bot` (a name, an author, typed options, ``new_game`` and ``search``). ``run`` serves
it over standard input and output, or, with ``--listen tcp://127.0.0.1:PORT`` (or ``ipc://PATH``), on a ZeroMQ
endpoint (SPEC.md §3.3), or, with ``--connect tcp://HOST:PORT --name NAME [--key K --server-key S] [--slots N]``,
connects in to an arena that serves (SPEC.md §3.4: each slot keeps one copy of the bot, warm across games).

The SDK does all of UQI (:mod:`.session`: the handshake, typed options, one worker thread per search so that
``isready`` and ``stop`` are answered during it, exactly one ``turn`` per ``go``, an ``error`` line for whatever it
cannot do), and exits on ``quit`` or at the end of its input, even in the middle of a search. Logs go to standard
error. A bot bug must not lose a game by itself: when ``search`` raises or returns an illegal turn, the SDK logs it
and answers a legal turn of its own.

This module is the SDK's face: the names a bot imports and its command line (:func:`run`, :func:`main`). The parts
live beside it: :mod:`.sdk` (what a bot is, the search context, the time budget), :mod:`.session` (the UQI
conversation, over stdio or in a warm slot), :mod:`.server` (``--listen``), :mod:`.client` (``--connect``),
:mod:`.endpoint` (the ``--listen`` endpoint, which the arena checks too) and :mod:`.serving` (what the server and the
client share).
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, NoReturn

from .endpoint import EndpointError, parse_endpoint
from .errors import ExitStatus
from .sdk import (
    DEFAULT_BUDGET,
    SAFETY_TIME,
    Bot,
    FunctionBot,
    OptionValue,
    OptionValues,
    SearchContext,
    SearchFunction,
    UnsupportedVariant,
    fallback_turn,
    time_budget,
)
from .server import serve_slot_sessions, serve_zmq
from .session import JOIN_ON_EXIT, BotSlot, serve_stdio
from .slots import SlotFactory

if TYPE_CHECKING:
    from .client import ConnectOptions  # imported when --connect is used: it loads ZeroMQ's authentication

__all__ = [
    "DEFAULT_BUDGET",
    "SAFETY_TIME",
    "Bot",
    "BotSlot",
    "EndpointError",
    "FunctionBot",
    "OptionValue",
    "OptionValues",
    "SearchContext",
    "SearchFunction",
    "UnsupportedVariant",
    "add_connect_arguments",
    "fallback_turn",
    "main",
    "parse_endpoint",
    "run",
    "serve_connected_until_stopped",
    "serve_slot_sessions",
    "serve_stdio",
    "serve_zmq",
    "time_budget",
]

log = logging.getLogger(__name__)

EXIT_USAGE: Final = ExitStatus.USAGE
"""The exit status of a bad command line (the bridge's name for it; :class:`ExitStatus` is the one table)."""


def serve_connected_until_stopped(make_slot: SlotFactory, options: ConnectOptions) -> int:
    """The SDK's and the bridge's ``--connect`` (:func:`.client.serve_connected_until_stopped`, imported only here:
    it loads ZeroMQ)."""
    from .client import serve_connected_until_stopped as serve

    return serve(make_slot, options)


def add_connect_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--connect``, ``--name``, ``--key``, ``--server-key`` and ``--slots`` to a bot's command line (read
    them with :func:`quarto_arena.protocol.client.connect_options`). Declared here, not beside the control lines in
    :mod:`.connect`: every bot's start parses its command line, and only one that connects in needs those."""
    group = parser.add_argument_group("connecting in to an arena that serves (SPEC §3.4)")
    group.add_argument("--connect", metavar="ENDPOINT", help="the arena's endpoint, tcp://HOST:PORT")
    group.add_argument("--name", metavar="NAME", help="the bot's name at the arena (with keys: its key's name)")
    group.add_argument("--key", metavar="FILE", help="the bot's secret key, NAME.key_secret (quarto-arena keys new)")
    group.add_argument("--server-key", metavar="FILE", help="the arena's public key, arena.key")
    group.add_argument("--slots", type=int, default=1, metavar="N", help="games played at once (default: 1)")
    group.add_argument(
        "--stay",
        action="store_true",
        help="keep connecting after the arena ends its run, while it does not know our key yet, and while its"
        " handshakes fail (a standing ladder)",
    )


def _parser(prog: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="A Quarto engine speaking UQI over standard input/output, or on a ZeroMQ endpoint.",
    )
    parser.add_argument(
        "--listen",
        metavar="ENDPOINT",
        help="serve on a ZeroMQ endpoint instead of stdio: tcp://127.0.0.1:PORT, ipc://PATH, or a port number",
    )
    parser.add_argument("--allow-remote", action="store_true", help="allow a --listen address that is not loopback")
    add_connect_arguments(parser)
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="level of the log on standard error (default: info)",
    )
    return parser


def main(bot: Bot | SearchFunction, argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Parses the command line and serves ``bot``; returns the exit status (:class:`ExitStatus`: 0, 2 for a bad
    command line, 3 when an arena refused it for good, 128 + N after a second signal N).

    A search still running when the session ends gets half a second to stop; after that the process exits
    through ``os._exit`` because a Python thread cannot be killed and the engine must exit (SPEC §3.2).
    """
    args = _parser(prog).parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    the_bot = bot if isinstance(bot, Bot) else FunctionBot(bot)
    if args.connect is not None or args.name or args.key or args.server_key or args.slots != 1 or args.stay:
        return _connect(the_bot, args)
    if args.listen is not None:
        try:
            endpoint = parse_endpoint(args.listen, allow_remote=args.allow_remote)
            return serve_zmq(the_bot, endpoint)
        except EndpointError as e:
            print(f"error: {e}", file=sys.stderr)
            return int(ExitStatus.USAGE)
    leftover = serve_stdio(the_bot)
    if leftover is not None:
        leftover.join(JOIN_ON_EXIT)
        if leftover.is_alive():
            log.warning("the search did not stop within %.1f s; exiting anyway", JOIN_ON_EXIT)
            logging.shutdown()
            os._exit(0)
    return 0


def _connect(bot: Bot, args: argparse.Namespace) -> int:
    """``--connect``: serves the arena's sessions, one warm copy of ``bot`` per slot (SPEC §3.4)."""
    from .client import ClientError, connect_options

    try:
        options = connect_options(args)
        assert options is not None
        if args.listen is not None:
            raise ClientError("give --listen or --connect, not both")
        pristine = copy.deepcopy(bot)  # a bot that cannot be copied is refused here, not at the first game
    except ClientError as e:
        print(f"error: {e}", file=sys.stderr)
        return int(ExitStatus.USAGE)
    except (TypeError, copy.Error) as e:
        print(
            f"error: --connect gives each session a copy of the bot, and this one cannot be copied: {e}",
            file=sys.stderr,
        )
        return int(ExitStatus.USAGE)
    return serve_connected_until_stopped(lambda loop, _: BotSlot(pristine, loop), options)


def run(bot: Bot | SearchFunction, argv: Sequence[str] | None = None) -> NoReturn:
    """Runs ``bot`` as an engine process: :func:`main`, then exit with its status."""
    sys.exit(main(bot, argv))
