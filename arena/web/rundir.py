"""A run directory as the pages see it: read whole (:func:`load_run`), or followed while another process writes
it (:class:`Follower`, which reads ``games.jsonl`` as it grows).

The journal is the truth, but it is binary and locked by the run that writes it; ``games.jsonl`` holds the same
records, one JSON object per line, flushed after each game and rebuilt from the journal whenever a run (re)starts.
A follower reads only complete lines, notices when the file is replaced (a resume rewrites it) and then reads it
again from the start, and reports a line it cannot use instead of stopping.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..journal import JOURNAL_NAME, JournalError, read_journal
from ..records import GameRecord
from ..run import CONFIG_NAME, JSONL_NAME, RunError, RunSpec
from . import WebError
from .model import RunInfo, RunModel

__all__ = ["Follower", "LoadedRun", "load_run", "run_info", "run_state"]


def run_info(config: Mapping[str, Any], where: Path) -> RunInfo:
    """The pages' view of a run's configuration (the journal header's, or ``config.json``)."""
    try:
        spec = RunSpec.from_dict(config)
        games = config.get("schedule", {}).get("games")
        total = None if games is None else int(games)
    except (RunError, TypeError, ValueError, AttributeError) as e:
        raise WebError(f"{where}: not a run configuration this quarto-arena reads: {e}") from None
    return RunInfo.of(spec, total)


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """A run directory read from its journal."""

    info: RunInfo
    """The run."""
    records: list[GameRecord]
    """Every counted game, in journal order."""
    torn: str | None
    """Why the journal's last record was dropped, or None."""


def load_run(directory: Path) -> LoadedRun:
    """Reads a run directory's journal (not locked: the run may still be writing it); :class:`WebError` if it
    cannot be read."""
    if not directory.is_dir():
        raise WebError(f"{directory}: no such run directory")
    try:
        contents = read_journal(directory / JOURNAL_NAME)
    except JournalError as e:
        raise WebError(str(e)) from None
    info = run_info(contents.config, directory / JOURNAL_NAME)
    return LoadedRun(info, list(contents.records.values()), contents.torn)


def run_state(model: RunModel) -> str:
    """How a run read from its files stands: ``complete``, ``H1 accepted``, ``H0 accepted`` or ``not finished``."""
    tracker = model.tracker
    if tracker is not None and tracker.decided:
        return f"{tracker.progress.status.decision.value.upper()} accepted"
    total = model.info.total
    return "complete" if total is not None and len(model.records) >= total else "not finished"


MAX_LINE: Final = 1 << 20
"""Longest line of ``games.jsonl`` a follower takes (a game's record is a few KiB); a longer one is skipped with a
warning, read through without being held."""
READ_PER_POLL: Final = 8 << 20
"""Bytes one :meth:`Follower.poll` reads at most: memory stays bounded by this and :data:`MAX_LINE` whatever the
file's size (a 4 GiB sparse file took 3 GB read whole), and the server's loop answers between two reads."""


class Follower:
    """Feeds a :class:`RunModel` with the games of a run directory as they are written (call :meth:`poll`)."""

    def __init__(self, directory: Path, warn: Callable[[str], None]) -> None:
        """Reads the configuration (``config.json``, else the journal's header); :class:`WebError` if there is
        none. ``warn`` receives one line per unusable line of ``games.jsonl``."""
        self.directory = directory
        self.path = directory / JSONL_NAME
        self.warn = warn
        if not directory.is_dir():
            raise WebError(f"{directory}: no such run directory")
        try:
            config = json.loads((directory / CONFIG_NAME).read_text(encoding="utf-8"))
            where = directory / CONFIG_NAME
        except (OSError, ValueError):
            config, where = None, directory / JOURNAL_NAME
        if not isinstance(config, dict):
            try:
                config = read_journal(directory / JOURNAL_NAME).config
            except JournalError as e:
                raise WebError(f"{directory}: not a run directory ({e})") from None
        self.info = run_info(config, where)
        self.model = RunModel(self.info)
        self.behind = False
        """True when the last :meth:`poll` stopped at :data:`READ_PER_POLL` with more of the file to read."""
        self._inode: int | None = None
        self._offset = 0
        self._line = 0
        self._partial = b""
        self._skipping = False  # inside a line longer than MAX_LINE: read through to its end
        self._live = False  # games read now finished while we watched (not the file's first reading)

    def poll(self) -> bool:
        """Reads what was appended since the last call (at most :data:`READ_PER_POLL`); True when the model
        changed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        changed = False
        if st.st_ino != self._inode or st.st_size < self._offset:
            # A new file (a resume rewrote it from the journal) or a shorter one: read it again from the start.
            self._inode, self._offset, self._line, self._partial, self._skipping = st.st_ino, 0, 0, b"", False
            self._live = False
            if self.model.records:
                self.model = RunModel(self.info)
                changed = True
        if st.st_size == self._offset:
            self.behind = False
            return changed
        size = min(st.st_size - self._offset, READ_PER_POLL)
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(size)
        except OSError as e:
            self.warn(f"{self.path}: cannot read: {e.strerror or e}")
            return changed
        self._offset += len(data)
        self.behind = self._offset < st.st_size
        for number, raw in self._lines(data):
            if raw.strip():
                changed = self._take(raw, number, self._live) or changed
        if not self.behind:
            # Games already in the file when we first read it through were not played while we watched.
            self._live = True
        return changed

    def _lines(self, data: bytes) -> list[tuple[int, bytes]]:
        """The complete lines ``data`` ends, with their numbers (a line too long is counted and skipped); keeps the
        unfinished one."""
        out: list[tuple[int, bytes]] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            if not self._skipping and len(self._partial) + len(piece) > MAX_LINE:
                self._skipping, self._partial = True, b""
                self.warn(f"{self.path.name} line {self._line + 1}: longer than {MAX_LINE >> 20} MiB, skipped")
            if end < 0:
                if not self._skipping:
                    self._partial += piece
                return out
            self._line += 1
            if self._skipping:
                self._skipping = False
            else:
                out.append((self._line, self._partial + piece))
                self._partial = b""
            start = end + 1

    def _take(self, raw: bytes, number: int, live: bool) -> bool:
        where = f"{self.path.name} line {number}"
        try:
            record = GameRecord.from_dict(json.loads(raw))
        except (ValueError, KeyError, TypeError) as e:
            self.warn(f"{where}: not a game record ({type(e).__name__}), skipped")
            return False
        if record.game_id in self.model.by_id:
            self.warn(f"{where}: game {record.game_id} again, skipped")
            return False
        self.model.add(record, counted_live=live)
        return True
