"""quarto_arena.arena.tune: ``quarto-arena tune``, SPSA over an engine's spin options, as a run of the one runner.

- :mod:`.spsa`: the algorithm, pure functions of plain values (gains, perturbations, the update);
- :mod:`.spec`: :class:`TuneSpec`, the ``--param`` settings and their checks;
- :mod:`.check`: the engine started once before anything is written, its options and values checked;
- :mod:`.tuner`: :class:`Tuner`, the state as games are counted (each game's engines, each pair's update);
- :mod:`.files`: ``tune.json`` and ``tune.csv``;
- :mod:`.tune`: :class:`Tune`, a tune bound to its run and directory, and :func:`build_tune`;
- :mod:`.pages`: its ``report.html`` and live page (the ``web`` extra for the live page).
"""

from .spec import HEADER_KEY, TuneError, TuneSpec, check_declared, parse_param, parse_params
from .spsa import Gains, Param
from .tune import Tune, build_tune, gains_of
from .tuner import Iteration, Tuner

__all__ = [
    "HEADER_KEY",
    "Gains",
    "Iteration",
    "Param",
    "Tune",
    "TuneError",
    "TuneSpec",
    "Tuner",
    "build_tune",
    "check_declared",
    "gains_of",
    "parse_param",
    "parse_params",
]
