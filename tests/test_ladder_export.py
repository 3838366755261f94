"""What a ladder publishes carries no path of its host: a real ladder of house engines run from this machine's paths
(this interpreter, a bot in the test's folder whose file is removed while the ladder plays, so that the referee's
words name its command), its pages and API while it runs, then ``ladder standings`` and ``ladder export`` (into
folders that do not exist yet), every output grepped for this host's paths."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from procs import CLI, cli, wait_until

ROOT = Path(__file__).resolve().parent.parent

#: A bot that crashes on its first search: each of its games needs a new process, so once its file is gone the
#: arena's words about it ("cannot start '...'") carry its command line.
VANISHING_BOT = """#!{python}
import sys
from quarto_arena.protocol.bot import Bot, run


class Vanishing(Bot):
    name = "Vanishing 1.0"
    author = "tests"

    def search(self, position, ctx):
        sys.exit(3)


run(Vanishing(), [])
"""


def host_paths(tmp_path: Path) -> list[str]:
    """This host's paths that the ladder's records hold: the interpreter (as given and resolved), its environment,
    the checkout, the test's folder; and the host's name."""
    python = Path(sys.executable)
    found = {str(python), str(python.resolve()), str(python.parent), str(ROOT), str(tmp_path), str(tmp_path.resolve())}
    name = socket.gethostname()
    return sorted(found | ({name} if len(name) >= 4 else set()))


def db_text(directory: Path, sql: str) -> list[str]:
    import sqlite3

    db = sqlite3.connect(f"file:{directory / 'ladder.db'}?mode=ro", uri=True, timeout=10)
    try:
        return [str(r[0]) for r in db.execute(sql)]
    finally:
        db.close()


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return str(r.read().decode())


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_nothing_a_ladder_publishes_carries_a_path_of_its_host(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp", reason="needs the web extra (pip install -e '.[web]')")
    bot = tmp_path / "bots" / "vanishing.py"
    bot.parent.mkdir()
    bot.write_text(VANISHING_BOT.format(python=sys.executable))
    bot.chmod(0o755)
    lad = tmp_path / "lad"
    argv = [*CLI, "ladder", "run", str(lad), "--house", "greedy", "--house", f"vanishing={bot}", "--house", "random"]
    argv += ["--tc", "st=0.2", "-j", "2", "--web", "127.0.0.1:0"]
    # Its lines (one a game: hundreds a second once the bot fails to start) go to a file: a pipe nobody reads
    # would fill and stop the ladder.
    log = tmp_path / "ladder.log"
    with log.open("w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, text=True, start_new_session=True)
    published: dict[str, str] = {}
    try:
        page = re.compile(r"^ladder page: (http://127\.0\.0\.1:\d+/)$", re.M)
        wait_until(lambda: page.search(log.read_text()), timeout=120, proc=proc)
        url = page.search(log.read_text())[1]  # type: ignore[index]
        # The pages are served before the ladder has made its database: its first line says it has.
        wait_until(lambda: re.search(r"^Ladder in ", log.read_text(), re.M), timeout=120, proc=proc)
        counted = "SELECT count(*) FROM games"
        wait_until(lambda: int(db_text(lad, counted)[0]) >= 6, timeout=120, proc=proc)
        bot.unlink()
        cannot = "SELECT id FROM games WHERE detail LIKE '%cannot start%'"
        wait_until(lambda: db_text(lad, cannot), timeout=120, proc=proc)
        # The records hold the host's paths (the operator's business)...
        sources = " ".join(db_text(lad, "SELECT engines FROM games") + db_text(lad, "SELECT detail FROM games"))
        assert str(bot) in sources and sys.executable in sources
        # ... and the pages and the API, once they have fitted these games, show none.
        wait_until(lambda: json.loads(fetch(url + "api/v1/standings"))["games"] >= 6, timeout=120, proc=proc)
        game = db_text(lad, cannot)[0]
        for path in ("", "api/v1/standings", "api/v1/games?limit=500", f"game/{game}", f"api/v1/games/{game}",
                     f"api/game/{game}", "api/boards"):  # fmt: skip
            published[path or "/"] = fetch(url + path)
        for name in ("greedy", "vanishing", "random"):
            published[f"bot/{name}"] = fetch(url + f"bot/{name}")
            published[f"api/v1/bots/{name}"] = fetch(url + f"api/v1/bots/{urllib.parse.quote(name)}")
        assert "cannot start" in published[f"game/{game}"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143, log.read_text()[-2000:]
    # The export, into folders that do not exist yet, and the standings.
    pgn, jsonl = tmp_path / "out" / "pgn" / "all.pgn", tmp_path / "out" / "jsonl" / "all.jsonl"
    out = cli("ladder", "export", str(lad), "--pgn", str(pgn), "--jsonl", str(jsonl))
    assert out.returncode == 0, out.stderr
    published["all.pgn"], published["all.jsonl"] = pgn.read_text(), jsonl.read_text()
    for fmt in ("text", "json", "csv"):
        published[f"standings {fmt}"] = cli("ladder", "standings", str(lad), "--format", fmt, "--by-version").stdout
    for where, text in published.items():
        for secret in host_paths(tmp_path):
            assert secret not in text, (where, secret)
        assert "Command" not in text and "python" not in text, where
    # What they do carry: who played, as the engines named themselves.
    assert '[WhiteEngine "Greedy 1.0"]' in published["all.pgn"] or '[BlackEngine "Greedy 1.0"]' in published["all.pgn"]
    assert '[Site "?"]' in published["all.pgn"] and "quarto-arena" in published["all.pgn"]
    assert "vanishing: cannot start 'vanishing': No such file or directory" in published["all.jsonl"]
    records = [json.loads(line) for line in published["all.jsonl"].splitlines()]
    assert len(records) == int(db_text(lad, "SELECT count(*) FROM games")[0])
    assert all(e["source"] == "" and e["options"] == {} for r in records for e in r["engines"])
    # `rate` reads the export back as before.
    assert cli("rate", str(pgn)).returncode == 0


def test_an_export_whose_folder_cannot_be_made_is_one_line_and_status_2(tmp_path: Path) -> None:
    from quarto_arena.arena.ladder import DB_NAME, LadderDB

    (tmp_path / "lad").mkdir()
    LadderDB.open(tmp_path / "lad" / DB_NAME).close()
    (tmp_path / "file").write_text("not a folder")
    out = cli("ladder", "export", str(tmp_path / "lad"), "--pgn", str(tmp_path / "file" / "x" / "all.pgn"))
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert str(tmp_path / "file") in out.stderr
    # An empty ladder exports nothing, into a folder it makes.
    out = cli("ladder", "export", str(tmp_path / "lad"), "--pgn", str(tmp_path / "new" / "all.pgn"))
    assert out.returncode == 0 and "0 games written" in out.stderr
    assert (tmp_path / "new" / "all.pgn").read_text() == ""
