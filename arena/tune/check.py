"""The engine check of a new tune, before anything is written: the engine is started once, its declared options
must take every ``--param``, and it must accept each one's MIN, MAX and START at ``setoption``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from quarto_arena.protocol.rules import Variant

from ..engine import Deadlines, EngineConfig, EngineError, EngineSession
from ..run import RunError
from .spec import TuneError, check_declared
from .spsa import Param

__all__ = ["check_engine"]


async def check_engine(
    config: EngineConfig, params: Sequence[Param], variant: Variant, *, deadlines: Deadlines | None = None
) -> tuple[Param, ...]:
    """The params named as the engine declares them, once it accepted every value it can be sent at the ends of
    each range (and the start), each with a ``newgame`` of ``variant`` as a tune sends them.

    Raises :class:`TuneError` (a usage error, exit status 2) for a param the engine's options cannot take or a value
    it refuses, :class:`RunError` (an engine failure, exit status 3) when it cannot be started with its other
    options. The engine is ended before this returns.
    """
    session = EngineSession(config, deadlines=deadlines)
    try:
        try:
            ident = await session.start()
        except EngineError as e:
            raise RunError(str(e), engine=True) from None
        named = check_declared(params, ident.options, config.options, config.name)
        for p in named:
            for value in dict.fromkeys((p.min, p.max, round(p.start))):
                session.configure(replace(config, options={**session.config.options, p.name: str(value)}))
                try:
                    await session.new_game(variant)  # the changed value goes with it, as between a tune's games
                except EngineError as e:
                    raise TuneError(
                        f"--param {p.name}: {config.name} refuses {p.name}={value} ({e}): tune a range whose every"
                        " value the engine takes"
                    ) from None
        return named
    finally:
        await session.quit()
