"""A tune's ``report.html``, and what it and the live page (:mod:`.live`) plot: :class:`TuneHistory`.

Both pages have the look of every run's (the project's style, script and charting library; arena/web) and the
tune's own sections: the parameters now, each one's trajectory inside its range, the perturbation and the learning
rate over the iterations, and the games per second; then how the games ended (the report) or the games being played
and the last ones finished (the live page), and the game viewer. ``arena/web/static/tune.js`` draws them from the
plain JSON values made here.
"""

from __future__ import annotations

import datetime
import html
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from ..journal import JOURNAL_NAME, JournalError, read_journal
from ..records import GameRecord
from ..run import CONFIG_NAME, RunError, RunOutcome, RunSpec
from ..web import WebError
from ..web.model import RunInfo, RunModel, game_view
from ..web.report import REPORT_NAME, outcome_state, report_document
from ..web.report import SCRIPTS as RUN_SCRIPTS
from .spec import TuneError, TuneSpec
from .tune import Tune
from .tuner import Iteration, Tuner

__all__ = [
    "HISTORY_POINTS",
    "TuneHistory",
    "is_tune_directory",
    "tune_report_html",
    "write_tune_directory_report",
    "write_tune_report",
]

HISTORY_POINTS: Final = 200
"""Points of the trajectories kept (thinned by half whenever they grow past this): a plot, not a ledger."""
GAIN_POINTS: Final = 100
"""Iterations at which the perturbation and the learning rate are plotted."""
#: The report's links to its sections.
_NAV: Final = (
    ("params", "Parameters"),
    ("trajectories", "Trajectories"),
    ("gains", "Perturbation and learning rate"),
    ("rate", "Games per second"),
    ("endings", "Endings"),
    ("games", "Games"),
)
#: The scripts inlined into the report, in order: a run report's (the charting library, its plug-in, the project's),
#: then the tune's.
SCRIPTS: Final = (*RUN_SCRIPTS, "static/tune.js")
#: The shortest span of time a games-per-second point is measured over (the games' start times are in seconds).
_RATE_SPAN_S: Final = 2.0


class TuneHistory:
    """The tune's trajectories as iterations are counted: every ``step``-th iteration kept (a power of two that
    doubles, dropping every other point, when more than :data:`HISTORY_POINTS` are kept), and always the last."""

    def __init__(self, tuner: Tuner) -> None:
        self.tuner = tuner
        self.step = 1
        self.kept: list[Iteration] = []
        self.version = 0
        """Bumped by every iteration added."""
        for iteration in tuner.iterations:
            self.add(iteration)

    def add(self, iteration: Iteration) -> None:
        """An iteration counted (the tune's listener)."""
        self.version += 1
        if iteration.number % self.step:
            return
        self.kept.append(iteration)
        if len(self.kept) > HISTORY_POINTS:
            self.step *= 2
            self.kept = [it for it in self.kept if it.number % self.step == 0]

    def summary(self) -> dict[str, Any]:
        """The parameters now, and the points of every plot (see :func:`_plots`)."""
        tuner = self.tuner
        t = tuner.tune
        g = t.gains
        k = min(tuner.pairs + 1, g.pairs)
        params = [
            {
                "name": p.name,
                "start": p.start,
                "min": p.min,
                "max": p.max,
                "c_end": p.c_end,
                "r_end": p.r_end,
                "value": value,
                "c": g.c(p, k),
                "a": g.a(p, k),
                "r": g.r(p, k),
            }
            for p, value in zip(t.params, tuner.theta, strict=True)
        ]
        points = list(self.kept)
        if tuner.iterations and (not points or points[-1] is not tuner.iterations[-1]):
            points.append(tuner.iterations[-1])
        return {"engine": t.engine, "pairs": tuner.pairs, "total": g.pairs, "params": params, **_plots(t, points)}


def _plots(tune: TuneSpec, points: list[Iteration]) -> dict[str, Any]:
    """What the charts plot.

    ``points``: the pairs counted at each point (0 first: the start) and ``values``, per parameter, theta there.
    ``gains``: the perturbation ``c``, the step's numerator ``a`` and the learning rate ``r = a / c**2``, per
    parameter, at :data:`GAIN_POINTS` iterations
    from the first to the last one counted (they are functions of the iteration, which pairs played side by side are
    counted out of). ``rate``: games per second, each point over at least a fiftieth of the games' span of time and
    :data:`_RATE_SPAN_S` seconds (their start times are whole seconds); one point for the whole when it is shorter.
    """
    g = tune.gains
    pairs = [0, *(it.number for it in points)]
    values = [[p.start, *(it.values[i] for it in points)] for i, p in enumerate(tune.params)]
    last = max((it.pair for it in points), default=1)
    ks = sorted({round(1 + (last - 1) * i / (GAIN_POINTS - 1)) for i in range(GAIN_POINTS)})
    timed = [it for it in points if it.time]
    rate_pairs: list[int] = []
    rates: list[float] = []
    if timed:
        span = max(_RATE_SPAN_S, (timed[-1].time - timed[0].time) / 50)
        since = timed[0]
        for it in timed[1:]:
            if it.time - since.time >= span:
                rate_pairs.append(it.number)
                rates.append(round(2 * (it.number - since.number) / (it.time - since.time), 3))
                since = it
        if not rates and len(timed) > 1:
            rate_pairs.append(timed[-1].number)
            rates.append(round(2 * (timed[-1].number - timed[0].number) / max(1.0, timed[-1].time - timed[0].time), 3))
    return {
        "points": {"pairs": pairs, "values": values},
        "gains": {
            "iterations": ks,
            "c": [[g.c(p, k) for k in ks] for p in tune.params],
            "a": [[g.a(p, k) for k in ks] for p in tune.params],
            "r": [[g.r(p, k) for k in ks] for p in tune.params],
        },
        "rate": {"pairs": rate_pairs, "games_per_s": rates},
    }


# ----------------------------------------------------------------------------------------------------------------
# report.html


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _number(value: float) -> str:
    return f"{value:.4g}" if abs(value) < 1e-3 else f"{value:.3f}".rstrip("0").rstrip(".")


def _params_table(summary: dict[str, Any]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("parameter", "value", "start", "min", "max", "c", "c_end", "r", "r_end"))
    rows = []
    for p in summary["params"]:
        cells = [p["value"], p["start"], p["min"], p["max"], p["c"], p["c_end"], p["r"], p["r_end"]]
        tds = "".join(f"<td class=n>{_number(v)}</td>" for v in cells)
        rows.append(f"<tr><td>{_e(p['name'])}</td>{tds}</tr>")
    return f'<table class="params"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}"><h2>{_e(title)}</h2>{body}</section>'


def tune_report_html(
    spec: RunSpec,
    tuner: Tuner,
    records: Sequence[GameRecord],
    state: str,
    *,
    notes: Iterable[str] = (),
    created: str | None = None,
) -> str:
    """The whole report of the tune ``tuner`` (its run ``spec``, its ``records`` in journal order) as one HTML
    document; ``state``: how the run stands, e.g. ``complete``."""
    info = RunInfo.of(spec, spec.games)
    model = RunModel(info, records)
    model.finish(state)
    for note in notes:
        model.notice(note)
    summary = model.summary()
    summary["progress"]["rate"] = summary["progress"]["eta_s"] = None  # a report is no stopwatch
    history = TuneHistory(tuner).summary()
    views = [game_view(r, model.index) for r in records]
    data = {"summary": summary, "tune": history, "games": views}
    t = tuner.tune
    title = f"Tune: {t.engine} over {', '.join(t.names)}"
    created = created or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta = (
        f"{tuner.pairs} of {t.gains.pairs} pairs ({len(records)} games), {state}; {info.variant.describe()};"
        f" time control {info.tc}; alpha {t.gains.alpha:g}, gamma {t.gains.gamma:g}, A {t.gains.big_a:g};"
        f" seed {t.seed}; written {created}"
    )
    options = " ".join(f"-o {p.name}={round(v)}" for p, v in zip(t.params, tuner.theta, strict=True))
    note = (
        "<p class=note>value: the tuned value now (real-valued; the engine is given it rounded); c and r: the"
        " perturbation and the learning rate of the next iteration, c_end and r_end theirs at the last.</p>"
    )
    parts = [
        _section("params", "Parameters", _params_table(history) + note + f"<pre>{_e(options)}</pre>"),
        _section(
            "trajectories",
            "Each parameter inside its range",
            '<div id="trajectory-charts" class="trajectories"></div>',
        ),
        _section(
            "gains",
            "Perturbation and learning rate",
            '<p class=note>c as a share of each range; a and r (a / c²) on log scales.</p><div class="chart">'
            '<canvas id="c-chart"></canvas></div><div class="chart"><canvas id="a-chart"></canvas></div>'
            '<div class="chart"><canvas id="r-chart"></canvas></div>',
        ),
        _section("rate", "Games per second", '<div class="chart"><canvas id="rate-chart"></canvas></div>'),
    ]
    ended = "".join(f"<tr><td>{_e(k)}</td><td class=n>{n}</td></tr>" for k, n in summary["terminations"])
    parts.append(_section("endings", "How the games ended", f'<table class="small"><tbody>{ended}</tbody></table>'))
    if summary["notices"]:
        items = "".join(f"<li>{_e(n)}</li>" for n in summary["notices"])
        parts.append(_section("notices", "Notes", f"<ul>{items}</ul>"))
    viewer = '<div id="viewer" class="viewer"><noscript><p>The game viewer needs JavaScript.</p></noscript></div>'
    parts.append(_section("games", "Games", viewer))
    return report_document(
        page="tune-report", title=title, meta=meta, nav=_NAV, sections=parts, data=data, scripts=SCRIPTS
    )


def write_tune_report(tune: Tune, outcome: RunOutcome) -> Path:
    """Writes ``report.html`` into the directory of the tune that just ended (atomically); returns its path."""
    directory = tune.run.directory
    assert directory is not None
    records = list(tune.run.records.values())
    return _write(directory, tune_report_html(tune.run.spec, tune.tuner, records, outcome_state(outcome)))


def is_tune_directory(directory: Path) -> bool:
    """True when ``directory`` holds a tune (its ``config.json`` says so)."""
    try:
        return bool(json.loads((directory / CONFIG_NAME).read_text(encoding="utf-8")).get("kind") == "tune")
    except (OSError, ValueError, AttributeError):
        return False


def write_tune_directory_report(directory: Path, *, warn: Callable[[str], None] | None = None) -> Path:
    """Writes ``report.html`` for a tune's directory from its journal (finished or not: a snapshot; the journal is
    read, not locked, as a run's report does). Raises :class:`~quarto_arena.arena.web.WebError` when the directory
    holds no readable tune, OSError when the file cannot be written."""
    try:
        contents = read_journal(directory / JOURNAL_NAME)
        spec = RunSpec.from_dict(contents.config)
        tune = TuneSpec.from_header(contents.config, str(directory))
    except (JournalError, RunError, TuneError) as e:
        raise WebError(str(e)) from None
    if contents.torn is not None and warn is not None:
        warn(f"journal: dropped a torn last record ({contents.torn})")
    plus, minus = spec.engines
    tuner = Tuner(tune, plus, minus)
    records = list(contents.records.values())
    tuner.replay(records)
    state = "complete" if tuner.pairs >= tune.gains.pairs else "not finished"
    return _write(directory, tune_report_html(spec, tuner, records, state))


def _write(directory: Path, text: str) -> Path:
    path = directory / REPORT_NAME
    tmp = directory / (REPORT_NAME + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
