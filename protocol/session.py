"""One UQI conversation for a bot of the SDK (:class:`Session`), served over standard input and output
(:func:`serve_stdio`) or kept warm in a slot across the sessions of a ZeroMQ server or a client
(:class:`BotSlot`).

The session answers the handshake, checks option values against their declared types, rebuilds the position from
every ``position`` command (the engine keeps no game state), runs each search in a worker thread so that ``isready``
is answered and ``stop`` works during it, sends exactly one ``turn`` per ``go`` (for ``go infinite`` only once
``stop`` arrives, as in UCI), refuses ``position``, ``go``, ``newgame`` and ``setoption`` during a search with an
``error`` line while a new ``uqi`` abandons the search (SPEC §4.10), and answers every line it does not understand
with an ``error`` line.

A bot bug must not lose a game by itself: when ``search`` raises, or returns something that is not a legal turn,
the session logs the problem (with the traceback) on standard error and answers a legal turn of its own
(:func:`~.sdk.fallback_turn`). Deliberately broken test bots turn this off with ``validate_turns = False``.
"""

from __future__ import annotations

import copy
import logging
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, Final

from .notation import NotationError
from .rules import IllegalTurn, Position, Turn, Variant
from .sdk import (
    Bot,
    SearchContext,
    UnsupportedVariant,
    fallback_turn,
    illegal_reason,
    machine_load,
    time_budget,
    typed_value,
)
from .uqi import (
    PROTOCOL_VERSION,
    Go,
    Info,
    IsReady,
    NewGame,
    PositionCommand,
    Quit,
    SetOption,
    Stop,
    Uqi,
    UqiError,
    format_reply,
    parse_command,
    strip_line,
)

if TYPE_CHECKING:
    from .slots import Loop

__all__ = ["JOIN_ON_EXIT", "BotSlot", "Session", "serve_stdio"]

log = logging.getLogger(__name__)

JOIN_ON_EXIT: Final = 0.5
"""Seconds a search gets to notice ``stop`` when the session ends before its engine is ended regardless."""
_SEARCH_RUNNING: Final = "error {} a search is running (send stop first)"
"""The answer to a command that SPEC §4.10 refuses during a search."""


class _Search:
    """One running ``go``: its context, its worker thread, and whether its output still goes anywhere."""

    __slots__ = ("cancelled", "ctx", "position", "thread", "write")

    def __init__(self, position: Position, limits: Go, bot: Bot, write: Callable[[str], None]) -> None:
        self.position = position
        self.write = write
        self.cancelled = False
        budget = time_budget(limits, position, overhead_ms=bot.move_overhead_ms, load=machine_load())
        self.ctx = SearchContext(
            limits, position=position, options=bot.option_values, budget=budget, on_info=self._info
        )
        self.thread: threading.Thread | None = None

    def _info(self, info: Info) -> None:
        if not self.cancelled:
            self.write(format_reply(info))


class Session:
    """One UQI conversation with one arena: turns command lines into calls on the bot and reply lines.

    ``handle`` runs on the transport's thread; searches run on worker threads. ``write`` must be thread-safe.
    """

    def __init__(self, bot: Bot, write: Callable[[str], None]) -> None:
        self._bot = bot
        self._write = write
        self._lock = threading.Lock()
        self._variant = Variant()
        self._position: Position | None = None
        self._position_problem = "no position was sent"
        self._search: _Search | None = None

    def handle(self, raw: str) -> bool:
        """Handles one line; returns False when the session ends (``quit``)."""
        line = strip_line(raw)
        if not line:
            return True
        try:
            cmd = parse_command(line)
        except UqiError as e:
            log.warning("bad command %r: %s", line[:200], e)
            self._write(f"error {e}")
            return True
        match cmd:
            case Uqi():
                self._handshake()
            case IsReady():
                self._write("readyok")
            case SetOption():
                self._set_option(cmd)
            case NewGame(variant):
                self._new_game(variant)
            case PositionCommand():
                self._set_position(cmd)
            case Go():
                self._go(cmd)
            case Stop():
                with self._lock:
                    if self._search is not None:
                        self._search.ctx.stop()
            case Quit():
                return False
        return True

    def _busy(self) -> bool:
        with self._lock:
            return self._search is not None

    def _handshake(self) -> None:
        # A handshake starts the session afresh: forget a search left over from an arena that went away.
        self.close()
        # SPEC §4.1: a second uqi keeps nothing of the session before, the variant and the position included.
        self._variant = Variant()
        self._position = None
        self._position_problem = "no position was sent"
        try:
            self._bot.reset_options()
        except Exception:
            log.exception("the bot's set_option raised while restoring defaults")
        self._write(f"id name {self._bot.name}")
        if self._bot.author:
            self._write(f"id author {self._bot.author}")
        for spec in self._bot.options:
            self._write(format_reply(spec))
        self._write(f"uqiok {PROTOCOL_VERSION}")

    def _set_option(self, cmd: SetOption) -> None:
        if self._busy():
            self._write(_SEARCH_RUNNING.format("setoption"))
            return
        spec = next((s for s in self._bot.options if s.name.lower() == cmd.name.lower()), None)
        if spec is None:
            self._write(f"error setoption unknown option {cmd.name}")
            return
        try:
            text = spec.check(cmd.value)
            self._bot.set_option(spec.name, typed_value(spec, text))
        except (UqiError, ValueError) as e:
            self._write(f"error setoption {e}")
            return
        log.info("option %s = %s", spec.name, text)

    def _new_game(self, variant: Variant) -> None:
        if self._busy():
            self._write(_SEARCH_RUNNING.format("newgame"))
            return
        try:
            self._bot.new_game(variant)
        except UnsupportedVariant as e:
            self._write(f"error newgame unsupported {variant.describe()}: {e}")
            return
        except Exception as e:
            log.exception("the bot's new_game raised")
            self._write(f"error newgame failed: {type(e).__name__}: {e}")
            return
        self._variant = variant
        self._position = None
        self._position_problem = "no position was sent since newgame"

    def _set_position(self, cmd: PositionCommand) -> None:
        if self._busy():
            self._write(_SEARCH_RUNNING.format("position"))
            return
        # Stateless, as in UCI: the whole game comes with every position command, under the newgame variant.
        try:
            self._position = cmd.position(self._variant)
        except (IllegalTurn, NotationError, ValueError) as e:
            self._position = None
            self._position_problem = f"the last position was invalid ({e})"
            self._write(f"error position {e}")

    def _go(self, limits: Go) -> None:
        position = self._position
        if position is None:
            self._write(f"error go: {self._position_problem}")
            return
        if position.is_over:
            self._write("error go: the game is over in this position, there is no turn to play")
            return
        with self._lock:
            if self._search is not None:
                self._write(_SEARCH_RUNNING.format("go"))
                return
            run = _Search(position, limits, self._bot, self._write)
            run.thread = threading.Thread(target=self._search_thread, args=(run,), name="search", daemon=True)
            self._search = run
        run.thread.start()

    def _search_thread(self, run: _Search) -> None:
        position = run.position
        turn: object = None
        try:
            turn = self._bot.search(position, run.ctx)
        except Exception:
            log.exception("the bot's search raised; answering a fallback legal turn instead")
            turn = fallback_turn(position)
        if self._bot.validate_turns:
            problem = illegal_reason(position, turn)
            if problem is not None:
                log.error("%s; answering a fallback legal turn instead", problem)
                turn = fallback_turn(position)
            assert isinstance(turn, Turn)
            turn = position.canonical(turn)
        if run.ctx.limits.infinite:
            # As in UCI, an infinite search answers only when stopped, however early the bot has made up its mind.
            run.ctx.wait_stopped()
        # Clearing the search and sending the turn under one lock: the arena may send the next go as soon as it
        # reads the turn, and that go must not find this search still registered.
        with self._lock:
            if self._search is run:
                self._search = None
            if not run.cancelled:
                self._write(f"turn {turn}")

    def close(self) -> threading.Thread | None:
        """Ends the session: stops a running search and drops its output. Returns its thread, if any."""
        with self._lock:
            run, self._search = self._search, None
        if run is None:
            return None
        run.cancelled = True
        run.ctx.stop()
        return run.thread


def serve_stdio(bot: Bot, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> threading.Thread | None:
    """Serves one session over byte streams (standard input and output by default) until ``quit`` or end of input.

    Returns the thread of a search that was still running at the end (already told to stop), or None.
    """
    instream = stdin if stdin is not None else sys.stdin.buffer
    outstream = stdout if stdout is not None else sys.stdout.buffer
    out_lock = threading.Lock()
    broken = False

    def write(line: str) -> None:
        nonlocal broken
        with out_lock:
            if broken:
                return
            try:
                outstream.write(line.encode("utf-8") + b"\n")
                outstream.flush()
            except (OSError, ValueError):
                broken = True  # the arena closed our output; the end of input follows
                log.warning("standard output is closed; dropping %r", line)

    session = Session(bot, write)
    try:
        for raw in iter(instream.readline, b""):
            if not session.handle(raw.decode("utf-8", "replace")):
                log.info("quit")
                break
        else:
            log.info("end of input")
    except KeyboardInterrupt:
        log.info("interrupted")
    return session.close()


class BotSlot:
    """The SDK's warm slot (a :class:`~quarto_arena.protocol.slots.Slot`): one bot object serves session after
    session (``uqi`` resets its options, ``newgame`` starts each game); with ``copies``, a copy of the bot as it was
    at start, and a new copy only after a session the arena killed or a search that would not stop."""

    def __init__(self, pristine: Bot, loop: Loop, *, copies: bool = True) -> None:
        self._pristine = pristine
        self._loop = loop
        self._copies = copies
        self._bot = pristine
        self._session: Session | None = None
        self._ready = False
        self._on_ready: Callable[[], None] = lambda: None

    def _fresh(self) -> Bot:
        return copy.deepcopy(self._pristine) if self._copies else self._pristine

    def start(self, on_ready: Callable[[], None]) -> None:
        self._on_ready = on_ready
        self._bot = self._fresh()
        self._ready = True
        on_ready()

    @property
    def ready(self) -> bool:
        return self._ready

    def open(self, write: Callable[[str | None], None]) -> None:
        if not self._ready:
            self._bot = self._fresh()  # the last session's search may still run on the old one
        self._ready = False
        self._session = Session(self._bot, write)

    def handle(self, line: str) -> bool:
        return True if self._session is None else self._session.handle(line)

    def exit_info(self) -> str | None:
        return None

    def finish(self, *, fresh: bool = False) -> None:
        session, self._session = self._session, None
        thread = None if session is None else session.close()
        if thread is None or not thread.is_alive():
            self._clean(fresh)
            return

        def wait() -> None:  # off the loop: the search has been told to stop
            thread.join(JOIN_ON_EXIT)
            lingers = thread.is_alive()
            self._loop.call_soon_threadsafe(lambda: self._clean(fresh or lingers))

        threading.Thread(target=wait, name="end-of-session", daemon=True).start()

    def _clean(self, fresh: bool) -> None:
        if self._session is not None:
            return  # a session opened meanwhile (on a fresh copy)
        if fresh:
            self._bot = self._fresh()
        self._ready = True
        self._on_ready()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
