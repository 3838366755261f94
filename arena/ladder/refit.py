"""The ladder's fitting process: the Elo fit of every counted game is pure Python and takes seconds on a large
ladder (half a minute for a million games between 1,000 bots), so it runs in a process of its own, kept for the
ladder's life (a fresh one each time would cost its imports, a third of a second), killed at once when the ladder
stops, even in the middle of a fit, and gone with the ladder if the ladder is killed (it watches its parent)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..stats.rating import RatingError
from ..transport.supervision import exit_with_parent
from .db import LadderDB, LadderDBError
from .standings import Standings, standings, stored_ratings

__all__ = ["FitWorker"]


class FitWorker:
    """A process of its own that fits the ratings (the fit is pure Python: in the ladder's process it would hold up
    the games), kept for the ladder's life and killed when it stops, at once, even in the middle of a fit."""

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._pipe: Any = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ladder-fit")

    def _ask(self, request: tuple[Any, ...]) -> Any:
        if self._process is None or not self._process.is_alive():
            ours, theirs = self._context.Pipe()
            process = self._context.Process(target=_serve_fits, args=(theirs, os.getpid()), daemon=True)
            process.start()
            theirs.close()
            self._process, self._pipe = process, ours
        self._pipe.send(request)
        kind, value = self._pipe.recv()
        if kind == "error":
            raise LadderDBError(value)
        return value

    async def fit(
        self, path: Path, anchor: tuple[str, float] | None, fresh: bool = True
    ) -> tuple[Standings, list[Any]]:
        """The standings of the database at ``path`` (every line), fitted afresh, or (``fresh`` False) from its stored
        fit; and the ratings to store (none for the stored fit's). LadderDBError (one line) when it cannot be read or
        fitted, OSError or EOFError when the process died."""
        result: tuple[Standings, list[Any]] = await asyncio.get_running_loop().run_in_executor(
            self._thread, self._ask, ("fit", str(path), anchor, fresh)
        )
        return result

    def close(self) -> None:
        """Kills the process (a fit in progress is dropped)."""
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        if self._pipe is not None:
            self._pipe.close()
        self._thread.shutdown(wait=False, cancel_futures=True)


def _serve_fits(pipe: Any, parent: int) -> None:
    """The fitting process: answers ("fit", path, anchor, fresh) with ("ok", (standings, ratings)) or ("error",
    text)."""
    exit_with_parent(parent)
    while True:
        try:
            _kind, path, anchor, fresh = pipe.recv()
        except EOFError:
            return
        try:
            db = LadderDB.open(Path(path), create=False)
            try:
                state = db.state(tallies=fresh)
            finally:
                db.close()
            try:
                fitted = standings(state, anchor, by_version=True, everything=True, fresh=fresh)
            except RatingError:  # the anchor has no game yet: the pool's average, until it has
                fitted = standings(state, None, by_version=True, everything=True, fresh=fresh)
            ratings = [] if fitted.table is None else stored_ratings(fitted.table, state.bots)
            pipe.send(("ok", (replace(fitted, table=None), ratings)))
        except Exception as e:
            pipe.send(("error", f"{type(e).__name__}: {e}"))
