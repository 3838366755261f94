"""Records and specs as plain data: the one codec of every dataclass the journal, JSON Lines, the run directory and
the cluster's tasks carry (GameRecord, EngineIdentity, TurnRecord, RunSpec, ServerSpec, Sprt, EngineConfig,
GameSpec, Deadlines, CheckTimeouts).

:func:`to_dict` writes each field of a dataclass under its name, in declaration order, by its type: an enum as its
value, a nested dataclass as its dict, a tuple or list as a list, a dict as a dict, None, str, int, float and bool
as they are. :func:`from_dict` reads them back and checks each value against the field's type (a TypeError or
ValueError naming the key, a KeyError naming a missing one). A new field with a plain type therefore travels
everywhere with no other edit; ``tests/test_serialized.py`` checks that every field does.

A field that needs more says so where it is declared, ``field(metadata=hook(...))``:

- ``key``: the dict's key when it is not the attribute's name (RunSpec's ``time_control`` is ``tc``);
- ``encode``/``decode``: a form of its own (a TimeControl as its text); ``decode`` gets the value and the fields
  read so far (an opening book is read under the variant read before it). With ``X | None``, the hook sees only
  the values that are not None;
- ``missing``: what the key's absence meant in files written before the field existed, when that is not the
  field's default (journals from before interleaving played encounter by encounter: ``missing=False``).

A key absent from the dict gives the field's ``missing``, else its default; a field with neither is required.
Keys the dataclass does not know are ignored (the journal's header keeps ``schedule`` beside the spec's fields).
Fields declared ``init=False`` are derived, and neither written nor read.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

__all__ = ["Hook", "from_dict", "from_row", "hook", "rows", "to_dict", "to_row"]

T = TypeVar("T")

_META: Final = "quarto_arena.codec"
_ABSENT: Final[Any] = object()

Encode = Callable[[Any], Any]
Decode = Callable[[Any, Mapping[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class Hook:
    """How one field differs from its type's plain form (see the module docstring)."""

    key: str | None = None
    """The dict's key; None: the attribute's name."""
    encode: Encode | None = None
    """Value -> plain data; None: by the field's type."""
    decode: Decode | None = None
    """(plain data, the fields read so far by attribute name) -> value; None: by the field's type."""
    missing: Any = _ABSENT
    """The value when the key is absent, if not the field's default."""


def hook(
    key: str | None = None,
    *,
    encode: Encode | None = None,
    decode: Decode | None = None,
    missing: Any = _ABSENT,
) -> dict[str, Any]:
    """Field metadata for ``dataclasses.field(metadata=...)``: a :class:`Hook`."""
    return {_META: Hook(key, encode, decode, missing)}


def to_dict(obj: Any) -> dict[str, Any]:
    """Every field of the dataclass instance ``obj`` as plain JSON/msgpack data (the inverse of :func:`from_dict`)."""
    out = {}
    for f in _plan(type(obj)):
        value = getattr(obj, f.name)
        out[f.key] = value if f.as_is else f.encode(value)
    return out


def from_dict(cls: type[T], d: Mapping[str, Any]) -> T:
    """An instance of the dataclass ``cls`` from :func:`to_dict`'s data; KeyError, TypeError or ValueError (or the
    class's own validation error) on bad data."""
    if not isinstance(d, Mapping):
        raise TypeError(f"expected a mapping for {cls.__name__}, not {type(d).__name__}")
    values: dict[str, Any] = {}
    for f in _plan(cls):
        raw = d.get(f.key, _ABSENT)
        if raw is _ABSENT:
            if f.missing is None:
                raise KeyError(f.key)
            values[f.name] = f.missing()
        else:
            values[f.name] = f.decode(raw, values)
    return cls(**values)


def to_row(obj: Any) -> list[Any]:
    """The fields of ``obj`` as a list, in declaration order (a compact form for many small values)."""
    return [getattr(obj, f.name) if f.as_is else f.encode(getattr(obj, f.name)) for f in _plan(type(obj))]


def from_row(cls: type[T], row: Sequence[Any]) -> T:
    """The inverse of :func:`to_row`; a shorter row (written before the later fields existed) leaves them at their
    defaults."""
    if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
        raise TypeError(f"expected a list for {cls.__name__}, not {type(row).__name__}")
    plan = _plan(cls)
    if len(row) > len(plan):
        raise ValueError(f"{cls.__name__} has {len(plan)} fields, not {len(row)}")
    values: dict[str, Any] = {}
    for i, f in enumerate(plan):
        if i < len(row):
            values[f.name] = f.decode(row[i], values)
        elif f.missing is None:
            raise KeyError(f.key)
        else:
            values[f.name] = f.missing()
    return cls(**values)


def rows(cls: type) -> dict[str, Any]:
    """Field metadata: a tuple of ``cls`` values written as :func:`to_row` lists."""

    def decode(v: Any, _earlier: Mapping[str, Any]) -> tuple[Any, ...]:
        if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
            raise TypeError(f"expected a list of {cls.__name__} rows, not {type(v).__name__}")
        return tuple(from_row(cls, r) for r in v)

    return hook(encode=lambda values: [to_row(x) for x in values], decode=decode)


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    key: str
    encode: Encode
    decode: Decode
    missing: Callable[[], Any] | None  # the value of an absent key; None: required
    as_is: bool  # written as it is (str, int, float, bool, or None): no call per value


_PLANS: dict[type, tuple[_Field, ...]] = {}


def _plan(cls: type) -> tuple[_Field, ...]:
    """How each field of ``cls`` is written and read (worked out once per class)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type) -> tuple[_Field, ...]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        h: Hook = f.metadata.get(_META, Hook())
        key = h.key or f.name
        tp = hints[f.name]
        if h.encode is not None or h.decode is not None:
            enc, dec = _hooked(tp, h, key)
        else:
            enc, dec = _converters(tp, key)
        missing: Callable[[], Any] | None = None
        if h.missing is not _ABSENT:
            missing = functools.partial(_same, h.missing)
        elif f.default is not dataclasses.MISSING:
            missing = functools.partial(_same, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            missing = f.default_factory
        as_is = h.encode is None and _scalar_type(tp)
        plan.append(_Field(f.name, key, enc, dec, missing, as_is))
    return tuple(plan)


def _scalar_type(tp: Any) -> bool:
    """True for str, int, float and bool, alone or ``| None``."""
    inner = _optional(tp)
    return (inner if inner is not None else tp) in (str, int, float, bool)


def _same(value: T) -> T:
    return value


def _optional(tp: Any) -> Any | None:
    """X for ``X | None``, None for any other type."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0]
        raise TypeError(f"no plain form for {tp}: give the field a hook")
    return None


def _hooked(tp: Any, h: Hook, key: str) -> tuple[Encode, Decode]:
    by_type_enc, by_type_dec = _converters(tp, key)
    enc = h.encode or by_type_enc
    dec = h.decode or by_type_dec
    if _optional(tp) is None:
        return enc, dec
    return (
        lambda v: None if v is None else enc(v),
        lambda v, earlier: None if v is None else dec(v, earlier),
    )


def _converters(tp: Any, key: str) -> tuple[Encode, Decode]:
    """Encode and decode by type; decode ignores the fields read so far."""
    enc, dec = _by_type(tp, key)
    return enc, functools.partial(_ignoring_earlier, dec)


def _ignoring_earlier(decode: Callable[[Any], Any], value: Any, _earlier: Mapping[str, Any]) -> Any:
    return decode(value)


def _by_type(tp: Any, key: str) -> tuple[Encode, Callable[[Any], Any]]:
    inner = _optional(tp)
    if inner is not None:
        enc, dec = _by_type(inner, key)
        return (lambda v: None if v is None else enc(v)), (lambda v: None if v is None else dec(v))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return (lambda v: v), (lambda v: v)
    if origin in (tuple, list):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return _fixed_tuple(args, key)
        item_enc, item_dec = _by_type(args[0], key)
        out: type = origin

        def decode_items(v: Any) -> Any:
            if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
                raise TypeError(f"{key}: expected a list, not {type(v).__name__}")
            return out(item_dec(x) for x in v)

        return (lambda v: [item_enc(x) for x in v]), decode_items
    if origin is dict:
        key_enc, key_dec = _by_type(args[0], key)
        value_enc, value_dec = _by_type(args[1], key)

        def decode_map(v: Any) -> Any:
            if not isinstance(v, Mapping):
                raise TypeError(f"{key}: expected a mapping, not {type(v).__name__}")
            return {key_dec(k): value_dec(x) for k, x in v.items()}

        return (lambda v: {key_enc(k): value_enc(x) for k, x in v.items()}), decode_map
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        enum_type = tp
        return (lambda v: v.value), (lambda v: enum_type(v))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        nested = tp
        return to_dict, (lambda v: from_dict(nested, v))
    if tp in (str, int, float, bool):
        return (lambda v: v), _scalar(tp, key)
    raise TypeError(f"no plain form for {tp!r} ({key}): give the field a hook")


def _fixed_tuple(args: tuple[Any, ...], key: str) -> tuple[Encode, Callable[[Any], Any]]:
    items = [_by_type(a, key) for a in args]

    def decode(v: Any) -> Any:
        if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence) or len(v) != len(items):
            raise TypeError(f"{key}: expected a list of {len(items)}, not {v!r}")
        return tuple(dec(x) for (_, dec), x in zip(items, v, strict=True))

    return (lambda v: [enc(x) for (enc, _), x in zip(items, v, strict=True)]), decode


def _scalar(tp: type, key: str) -> Callable[[Any], Any]:
    if tp is float:

        def number(v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"{key}: expected a number, not {type(v).__name__}")
            return float(v)

        return number
    names = {str: "a string", int: "an integer", bool: "true or false"}

    def check(v: Any) -> Any:
        if not isinstance(v, tp) or (tp is int and isinstance(v, bool)):
            raise TypeError(f"{key}: expected {names[tp]}, not {type(v).__name__}")
        return v

    return check
