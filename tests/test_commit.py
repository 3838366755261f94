"""Group commit: a game counts only once its record is synced into the journal, in the order submitted, and a run
that stops syncs what it has at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from quarto_arena.arena.journal import Journal, read_journal
from quarto_arena.arena.run.commit import Committer
from test_journal import CONFIG, game


def test_a_game_is_counted_only_after_its_record_is_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "journal.qaj"
    seen: list[tuple[int, bool]] = []

    async def main() -> None:
        with Journal.create(path, CONFIG) as journal:

            def counted(record: object, data: object) -> None:
                assert data == record.to_dict()  # type: ignore[attr-defined]  # formatted once, as the journal has it
                game_id = record.game_id  # type: ignore[attr-defined]
                # What a resume would read at this very moment: the journal file, from disk.
                seen.append((game_id, game_id in read_journal(path).records))

            committer = Committer(journal, counted)
            committer.submit(game(1))
            await asyncio.sleep(0)  # the first sync starts; the next two join the following one
            committer.submit(game(2))
            committer.submit(game(3))
            await committer.drain()
            await committer.close()

    asyncio.run(main())
    assert seen == [(1, True), (2, True), (3, True)]


def test_without_a_journal_a_game_counts_at_once() -> None:
    seen: list[int] = []
    committer = Committer(None, lambda record, data: seen.append(record.game_id))
    committer.submit(game(7))
    assert seen == [7]
