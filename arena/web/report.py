"""``report.html``: one self-contained file per run (tables, plots, the game viewer) that opens offline.

Everything is inside the file: the style, the charting library, the project's script, and the data as JSON. The
tables are plain HTML written here, readable without JavaScript; the plots and the viewer need it. A Content
Security Policy in the file allows no network at all and only the file's own scripts (by their SHA-256), so an
engine name such as ``<script>...`` can only ever be text: every engine-supplied string is escaped here, and the
script puts strings into the page with ``textContent`` only.

Per-turn analysis: when the run directory holds ``games.analysis.jsonl`` (what ``quarto-arena analyse
DIR/games.pgn`` writes next to the PGN), each analysed game gets the value before and after each analysed turn, and
the viewer marks the turns where the value changed hands (see :func:`read_analysis` for the format).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Any, Final

from ..records import GameRecord
from ..run import RunOutcome
from ..stats import Cell, display_cell
from .model import RunInfo, RunModel, game_view

__all__ = [
    "ANALYSIS_NAME",
    "REPORT_NAME",
    "outcome_state",
    "read_analysis",
    "report_document",
    "report_html",
    "script_text",
    "sha256_source",
    "write_directory_report",
    "write_report",
]

_HERE: Final = Path(__file__).parent
REPORT_NAME: Final = "report.html"
ANALYSIS_NAME: Final = "games.analysis.jsonl"
#: The scripts inlined into the report, in order (the library, its heat-map controller, ours, and the "open on the
#: board" links, shown when the report is opened as report.html?board=ADDRESS: the analysis board prints it).
SCRIPTS: Final = (
    "static/vendor/chart.umd.min.js",
    "static/vendor/chartjs-chart-matrix.min.js",
    "static/quarto.js",
    "static/board-link.js",
)
_TITLES: Final = {"tournament": "Tournament", "match": "Match", "sprt": "SPRT", "tune": "Tune"}
#: The report's links to its sections.
_NAV: Final = (
    ("standings", "Standings"),
    ("scores", "Score matrix"),
    ("ratings", "Ratings"),
    ("endings", "Endings"),
    ("games", "Games"),
)


def asset(name: str) -> str:
    """The text of a file shipped with this package: ``static/quarto.js``, ``templates/report.html``...

    Read beside this module (the package is always installed as files: it has a compiled module), not through
    importlib.resources, which costs a 2-game play about 1% of its instructions to import (benchmarks/startup.py).
    """
    return (_HERE / name).read_text(encoding="utf-8")


def served_page(template: str, title: str, board: str, **markup: str) -> str:
    """``templates/TEMPLATE`` with ``$head`` (``templates/head.html``, the head every served page shares) and
    ``$title`` filled in, both from ``title`` (plain text, escaped here), ``$board`` the analysis board's address
    (or empty) and ``markup`` (HTML as given: escape what is text before)."""
    plain = {"title": html.escape(title), "board": html.escape(board)}
    head = Template(asset("templates/head.html")).substitute(plain).rstrip("\n")
    return Template(asset(f"templates/{template}")).substitute(markup, head=head, **plain)


def script_text(name: str) -> str:
    """A shipped script's text, ready to be inlined (no source map line; refused when it could end the element)."""
    text = asset(name)
    # The source map is not shipped; a reference to it would be the one request a viewer's devtools make.
    lines = [line for line in text.splitlines() if not line.startswith("//# sourceMappingURL=")]
    text = "\n".join(lines)
    # Inside <script>, only "</script" (any case) could end the element early; none of our scripts has it.
    if "</script" in text.lower():
        raise ValueError(f"{name} contains '</script' and cannot be inlined")
    return text


def json_for_html(value: object) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` appear raw."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def sha256_source(text: str) -> str:
    """A Content Security Policy's source for an inline script: ``'sha256-...'`` of its text."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


# ----------------------------------------------------------------------------------------------------------------
# Analysis


def read_analysis(path: Path, records: Mapping[int, GameRecord]) -> tuple[dict[int, list[Any]], list[str]]:
    """Per-turn values from ``quarto-arena analyse``'s JSON Lines, by game id, and one warning per line not used.

    Each line is one game: ``{"game_id": "12", "white": ..., "black": ..., "turns": [{"ply": 9, "turn": "c3a",
    "before": {"value": "win", "turns": 5} | null, "after": {...} | null, "mistake": "win thrown away" | null,
    "best": ["a1"]}, ...]}``, values for the player who played the turn. A game is matched by ``game_id`` (the
    PGN's GameId tag) and must agree with the record on the players and on every analysed turn's token; a line
    that does not is reported, never shown on the wrong game. The result, per game, is a list with one entry per
    turn: None, or ``{"before": "win in 5", "after": "draw", "mistake": ..., "best": [...]}``.
    """
    out: dict[int, list[Any]] = {}
    warnings: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return out, warnings
    except (OSError, UnicodeDecodeError) as e:
        return out, [f"{path}: cannot read the analysis: {e}"]
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            game = json.loads(line)
            game_id = int(game["game_id"])
            record = records.get(game_id)
            if record is None:
                warnings.append(f"{where}: game {game_id} is not in this run")
                continue
            if (game.get("white"), game.get("black")) != (record.first, record.second):
                warnings.append(f"{where}: game {game_id} has other players than the run's")
                continue
            values: list[Any] = [None] * len(record.turns)
            for t in game["turns"]:
                ply = int(t["ply"])
                if not 0 <= ply < len(record.turns) or str(t["turn"]) != record.turns[ply].token:
                    raise ValueError(f"turn {ply + 1} is not {t['turn']!r} in the run's game")
                values[ply] = {
                    "before": _value_text(t.get("before")),
                    "after": _value_text(t.get("after")),
                    "mistake": None if t.get("mistake") is None else str(t["mistake"]),
                    "best": [str(b) for b in t.get("best") or []],
                }
        except (ValueError, KeyError, TypeError) as e:
            warnings.append(f"{where}: not an analysed game of this run ({type(e).__name__}: {e})")
            continue
        out[game_id] = values
    return out, warnings


def _value_text(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    verdict = str(value.get("value"))
    turns = value.get("turns")
    return verdict if verdict == "draw" or turns is None else f"{verdict} in {int(turns)}"


# ----------------------------------------------------------------------------------------------------------------
# HTML


def _e(value: object) -> str:
    """``html.escape(str(value), quote=True)``, the same five replacements: the html module builds its table of
    2,231 named entities on import, a 2-game play's 1% (benchmarks/startup.py), and escaping needs none of them."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;").replace("'", "&#x27;")


def _numeric(value: Cell) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _table(table: Mapping[str, Any], css: str = "") -> str:
    headers: list[str] = table["headers"]
    head = "".join(f"<th>{_e(h.replace('_', ' '))}</th>" for h in headers)
    body = []
    for row in table["rows"]:
        cells = "".join(
            f"<td{' class=n' if _numeric(v) else ''}>{_e(display_cell(h, v))}</td>"
            for h, v in zip(headers, row, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def heat_colour(score: float) -> str:
    """The heat map's colour of a score 0..1: red for 0, pale for 1/2, green for 1 (the script uses the same)."""
    return f"hsl({round(120 * score)}, 65%, {round(92 - 30 * abs(score - 0.5))}%)"


def _crosstable(cross: Mapping[str, Any]) -> str:
    names: list[str] = cross["names"]
    if not names:
        return "<p>No game has been scored yet.</p>"
    head = "<th>player</th>" + "".join(f'<th title="{_e(n)}">{i + 1}</th>' for i, n in enumerate(names))
    rows = []
    for i, (name, cells) in enumerate(zip(names, cross["cells"], strict=True)):
        tds = []
        for cell in cells:
            if cell is None:
                tds.append('<td class="none"></td>')
            else:
                points, games = cell
                score = points / games if games else 0.5
                tip = f"{points:g} of {games} points ({100 * score:.0f}%)"
                tds.append(f'<td style="background:{heat_colour(score)}" title="{_e(tip)}">{points:g}/{games}</td>')
        rows.append(f"<tr><th>{i + 1}. {_e(name)}</th>{''.join(tds)}</tr>")
    return f'<table class="cross"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _games_table(records: Sequence[GameRecord], views: Mapping[int, Mapping[str, Any]]) -> str:
    rows = []
    for r in records:
        v = views[r.game_id]
        marks = "" if v["values"] is None else " (analysed)"
        rows.append(
            f'<tr><td><a href="#game-{r.game_id}">{r.game_id}</a></td><td>{_e(r.first)}</td><td>{_e(r.second)}</td>'
            f"<td>{_e(r.result.value)}</td><td>{_e(v['reason'])}{marks}</td><td>{len(r.turns)}</td></tr>"
        )
    head = "<tr><th>game</th><th>first</th><th>second</th><th>result</th><th>how it ended</th><th>turns</th></tr>"
    return f'<table class="games"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}"><h2>{_e(title)}</h2>{body}</section>'


def report_html(
    info: RunInfo,
    records: Sequence[GameRecord],
    *,
    state: str,
    analysis: Mapping[int, list[Any]] | None = None,
    notes: Iterable[str] = (),
    created: str | None = None,
) -> str:
    """The whole report as one HTML document (``state``: how the run stands, e.g. ``complete``)."""
    model = RunModel(info, records)
    model.finish(state)
    for note in notes:
        model.notice(note)
    summary = model.summary()
    summary["progress"]["rate"] = summary["progress"]["eta_s"] = None  # a report is no stopwatch
    views = {r.game_id: game_view(r, model.index) for r in records}
    for game_id, values in (analysis or {}).items():
        if game_id in views:
            views[game_id]["values"] = values
    # In the schedule's order (game number: round by round), not the order the games happened to finish in.
    records = sorted(records, key=lambda r: r.game_id)
    data = {"summary": summary, "games": [views[r.game_id] for r in records]}
    kind = info.kind.value
    title = f"{_TITLES[kind]}: {', '.join(info.names)}"
    done, total = len(records), info.total
    played = f"{done} of {total} games" if total is not None else f"{done} games"
    created = created or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta = f"{played}, {state}; {info.variant.describe()}; time control {info.tc}; written {created}"
    note = "".join(f"<p class=note>{_e(line)}.</p>" for line in summary["table_notes"])
    parts = [_section("standings", "Standings", _table(summary["table"], "standings") + note)]
    parts.append(_section("engines", "Engines (as they named themselves)", _table(summary["engines"], "small")))
    if summary["match"]:
        lines = "\n".join(summary["match"])
        parts.append(_section("match", "Match", f"<pre>{_e(lines)}</pre>"))
    sprt = summary["sprt"]
    if sprt is not None:
        body = f"<pre>{_e(sprt['line'])}</pre>" + '<div class="chart"><canvas id="llr-chart"></canvas></div>'
        parts.append(_section("sprt", "SPRT: log-likelihood ratio against its bounds", body))
    heat = '<div class="chart square"><canvas id="heat-chart"></canvas></div>'
    parts.append(_section("scores", "Score matrix (row player's points)", _crosstable(summary["crosstable"]) + heat))
    chart = '<div class="chart"><canvas id="rating-chart"></canvas></div>'
    note = "<p class=note>Each engine's rating after every so many games, with its 95% interval as a band.</p>"
    parts.append(_section("ratings", "Rating as games accumulate", note + chart))
    ended = _table({"headers": ["how it ended", "games"], "rows": summary["terminations"]}, "small")
    forfeits = summary["forfeits"]
    if forfeits["rows"]:
        ended += "<h3>Forfeits by engine and reason</h3>" + _table(forfeits, "small")
    ended += '<div class="chart"><canvas id="ending-chart"></canvas></div>'
    parts.append(_section("endings", "How the games ended", ended))
    if summary["notices"]:
        items = "".join(f"<li>{_e(n)}</li>" for n in summary["notices"])
        parts.append(_section("notices", "Notes", f"<ul>{items}</ul>"))
    viewer = (
        '<div id="viewer" class="viewer"><noscript><p>The game viewer needs JavaScript; every game is listed below.'
        "</p></noscript></div>"
        f"<details><summary>All {len(records)} games</summary>{_games_table(records, views)}</details>"
    )
    parts.append(_section("games", "Games", viewer))
    return report_document(page="report", title=title, meta=meta, nav=_NAV, sections=parts, data=data)


def report_document(
    *,
    page: str,
    title: str,
    meta: str,
    nav: Sequence[tuple[str, str]],
    sections: Sequence[str],
    data: object,
    scripts: Sequence[str] = SCRIPTS,
) -> str:
    """A self-contained page of a run: ``templates/report.html`` with the style, ``scripts`` inlined (the only ones
    its Content Security Policy allows, by their hashes), the ``sections``' HTML and ``data`` as JSON. ``page`` is
    the body's ``data-page`` (which boot the scripts run); ``nav``: (section id, label) links; ``title`` and ``meta``
    are text."""
    texts = [script_text(name) for name in scripts]
    csp = (
        "default-src 'none'; "
        f"script-src {' '.join(sha256_source(s) for s in texts)}; "
        "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    )
    return Template(asset("templates/report.html")).substitute(
        csp=_e(csp),
        page=_e(page),
        title=_e(title),
        meta=_e(meta),
        nav=" ".join(f'<a href="#{_e(ident)}">{_e(label)}</a>' for ident, label in nav),
        style=asset("static/style.css"),
        body="\n".join(sections),
        data=json_for_html(data),
        scripts="\n".join(f"<script>{s}</script>" for s in texts),
    )


def write_report(directory: Path, outcome: RunOutcome, *, warn: Callable[[str], None] | None = None) -> Path:
    """Writes ``report.html`` into the directory of the run that just ended (atomically); returns its path.

    Reads ``games.analysis.jsonl`` there if present; each of its lines that cannot be used goes to ``warn``.
    """
    info = RunInfo.of(outcome.spec, outcome.total)
    return _write(directory, info, list(outcome.records), outcome_state(outcome), warn)


def write_directory_report(directory: Path, *, warn: Callable[[str], None] | None = None) -> Path:
    """Writes ``report.html`` for any run directory from its journal (finished or not: a snapshot).

    Raises :class:`~quarto_arena.arena.web.WebError` when the directory holds no readable run, OSError when the
    file cannot be written.
    """
    from .rundir import load_run, run_state  # reading a run directory: not what a run that just ended needs

    loaded = load_run(directory)
    if loaded.torn is not None and warn is not None:
        warn(f"journal: dropped a torn last record ({loaded.torn})")
    state = run_state(RunModel(loaded.info, loaded.records))
    return _write(directory, loaded.info, loaded.records, state, warn)


def _write(
    directory: Path, info: RunInfo, records: list[GameRecord], state: str, warn: Callable[[str], None] | None
) -> Path:
    analysis, warnings = read_analysis(directory / ANALYSIS_NAME, {r.game_id: r for r in records})
    for w in warnings:
        if warn is not None:
            warn(w)
    text = report_html(info, records, state=state, analysis=analysis, notes=warnings)
    path = directory / REPORT_NAME
    tmp = directory / (REPORT_NAME + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def outcome_state(outcome: RunOutcome) -> str:
    """How a run stands, in a few words: ``complete``, ``H1 accepted``, ``interrupted``..."""
    verdict = outcome.verdict
    if verdict is not None:
        return {"h1": "H1 accepted", "h0": "H0 accepted"}.get(verdict.value, verdict.value)
    if outcome.interrupted is not None:
        return "interrupted"
    if outcome.failure is not None:
        return "stopped by an engine failure"
    return "complete" if outcome.complete else "stopped"
