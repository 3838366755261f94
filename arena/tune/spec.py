"""What defines a tune besides its run: :class:`TuneSpec` (kept in the journal's header beside the run's spec, so
``--resume`` needs no options), the ``--param`` settings it is made of (:func:`parse_params`), and the checks of
those settings against the options the engine declares (:func:`check_declared`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from quarto_arena.protocol.uqi import OptionSpec, OptionType

from .. import codec
from ..errors import ArenaError, ExitStatus
from .spsa import C_END_FRACTION, R_END, Gains, Param

__all__ = ["HEADER_KEY", "TuneError", "TuneSpec", "check_declared", "parse_param", "parse_params"]

HEADER_KEY: Final = "tune"
"""Where the journal's header keeps the :class:`TuneSpec` (beside the run spec's fields)."""
_FORMAT: Final = 1
_ID: Final = re.compile(r"[A-Za-z0-9_.\-]+\Z")
_SYNTAX: Final = "NAME=START,MIN,MAX[,C_END[,R_END]], e.g. Aggression=50,0,100"


class TuneError(ArenaError):
    """A tune that cannot start (a bad ``--param``, a journal that holds no tune...): one line, exit status 2."""

    status = ExitStatus.USAGE
    reason = "tune"


@dataclass(frozen=True, slots=True)
class TuneSpec:
    """A tune: the engine's options tuned, the gains, the seed of the perturbations."""

    engine: str
    """The tuned engine's name (its two copies in the run are ``NAME+`` and ``NAME-``)."""
    params: tuple[Param, ...] = field(metadata=codec.hook(decode=lambda v, _: tuple(_param(p) for p in v)))
    """The tuned options, in ``--param`` order."""
    gains: Gains
    """The iterations (pairs) and the decay of the perturbation and of the learning rate."""
    seed: int = 0
    """Seeds each iteration's perturbation (``--seed``, which also seeds the random openings)."""
    word: str = ""
    """The engine as the command line named it (a command, an endpoint, a built-in or a name of the engines file),
    for the ``sprt`` line a tune ends with."""
    engines_file: str | None = None
    """The engines file the engine came from (absolute), for that line too."""
    format: int = _FORMAT
    """The version of this description."""

    @property
    def names(self) -> list[str]:
        """The tuned options' names."""
        return [p.name for p in self.params]

    def to_dict(self) -> dict[str, Any]:
        """Plain msgpack/JSON types for the journal's header (every field, by :mod:`..codec`)."""
        return codec.to_dict(self)

    @classmethod
    def from_header(cls, header: Mapping[str, Any], where: str) -> TuneSpec:
        """The tune a journal's header holds; :class:`TuneError` when it holds none (not a tune) or a bad one."""
        raw = header.get(HEADER_KEY)
        if raw is None:
            raise TuneError(f"{where} holds a {header.get('kind', 'run')}, not a tune: resume it with its own command")
        try:
            spec = codec.from_dict(cls, raw)
        except (KeyError, TypeError, ValueError) as e:
            raise TuneError(f"{where}: the journal's tune is invalid: {e}") from None
        if spec.format != _FORMAT:
            raise TuneError(f"{where}: tune format {spec.format} is not one this quarto-arena reads ({_FORMAT})")
        return spec


def _param(raw: Mapping[str, Any]) -> Param:
    return codec.from_dict(Param, raw)


def _number(text: str, what: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TuneError(f"--param {name}: {what} {text.strip()!r} is not a number ({_SYNTAX})") from None
    if not math.isfinite(value):
        raise TuneError(f"--param {name}: {what} must be a finite number, not {text.strip()!r}")
    return value


def _integer(text: str, what: str, name: str) -> int:
    value = _number(text, what, name)
    if value != int(value):
        raise TuneError(f"--param {name}: {what} {text.strip()!r} must be an integer (a spin option's bound)")
    return int(value)


def parse_param(text: str) -> Param:
    """``NAME=START,MIN,MAX[,C_END[,R_END]]`` -> a :class:`Param` (C_END by default a twentieth of the range, R_END
    0.002); :class:`TuneError` naming what is wrong and how to write it."""
    name, eq, rest = text.partition("=")
    name = name.strip()
    if not eq or not _ID.match(name):
        raise TuneError(f"--param {text!r}: expected {_SYNTAX}")
    fields = rest.split(",")
    if not 3 <= len(fields) <= 5:
        raise TuneError(f"--param {name}: {len(fields)} values; expected {_SYNTAX}")
    start = _number(fields[0], "START", name)
    low, high = _integer(fields[1], "MIN", name), _integer(fields[2], "MAX", name)
    if low >= high:
        raise TuneError(f"--param {name}: MIN {low} must be below MAX {high}")
    if not low <= start <= high:
        raise TuneError(f"--param {name}: START {start:g} is outside [{low}, {high}]: start inside the range")
    span = high - low
    c_end = _number(fields[3], "C_END", name) if len(fields) > 3 else C_END_FRACTION * span
    if not 0 < c_end <= span:
        raise TuneError(
            f"--param {name}: C_END {c_end:g} must be above 0 and at most the range MAX - MIN = {span}"
            f" (the perturbation at the end; default a twentieth of the range, {C_END_FRACTION * span:g})"
        )
    r_end = _number(fields[4], "R_END", name) if len(fields) > 4 else R_END
    if r_end < 0:
        raise TuneError(
            f"--param {name}: R_END {r_end:g} cannot be negative (the learning rate at the end; default {R_END:g})"
        )
    return Param(name, start, low, high, c_end, r_end)


def parse_params(texts: Sequence[str]) -> tuple[Param, ...]:
    """Every ``--param``; :class:`TuneError` for a bad one, none at all, or an option given twice."""
    if not texts:
        raise TuneError(f"tune needs at least one --param {_SYNTAX}")
    params = tuple(parse_param(t) for t in texts)
    seen: set[str] = set()
    for p in params:
        if p.name.lower() in seen:
            raise TuneError(f"--param {p.name} is given twice: give each option once")
        seen.add(p.name.lower())
    return params


def check_declared(
    params: Sequence[Param], declared: Mapping[str, OptionSpec], fixed: Mapping[str, str], engine: str
) -> tuple[Param, ...]:
    """The params with their names as the engine declares them; :class:`TuneError` for an option the engine does
    not declare, one that is not a ``spin``, a range outside the declared one, or one also set by ``-o``.

    ``declared``: the engine's options by lower-case id (its handshake); ``fixed``: the options it is given.
    """
    out = []
    fixed_keys = {k.lower() for k in fixed}
    for p in params:
        spec = declared.get(p.name.lower())
        if spec is None:
            spins = ", ".join(s.name for s in declared.values() if s.type is OptionType.SPIN) or "none"
            raise TuneError(f"--param {p.name}: {engine} declares no option {p.name} (its spin options: {spins})")
        if spec.type is not OptionType.SPIN:
            raise TuneError(
                f"--param {p.name}: {engine}'s option {spec.name} is a {spec.type.value}; tune takes spin options"
                " (integers): set this one with -o"
            )
        assert spec.min is not None and spec.max is not None
        if p.min < spec.min or p.max > spec.max:
            raise TuneError(
                f"--param {p.name}: the range [{p.min}, {p.max}] is outside the declared one"
                f" [{spec.min}, {spec.max}]: tune inside it"
            )
        if spec.name.lower() in fixed_keys:
            raise TuneError(f"--param {p.name}: the option is also set with -o or the engines file: the tune sets it")
        out.append(replace(p, name=spec.name))
    return tuple(out)
