"""Records and specs as plain data: the one codec of every dataclass the journal, JSON Lines, the run directory and
the cluster's tasks carry (GameRecord, EngineIdentity, TurnRecord, RunSpec, GameSettings, ServerSpec, Sprt,
EngineConfig, GameSpec, Deadlines, CheckTimeouts).

:func:`to_dict` writes each field of a dataclass under its name, in declaration order, by its type: an enum as its
value, a nested dataclass as its dict, a tuple or list as a list, a dict as a dict (one of plain values is the
object's own dict: what to_dict gives is for writing out, not for changing), None, str, int, float and bool as they
are. :func:`from_dict` reads them back and checks each value against the field's type (a TypeError or
ValueError naming the key, a KeyError naming a missing one). A new field with a plain type therefore travels
everywhere with no other edit; ``tests/test_serialized.py`` checks that every field does.

A field that needs more says so where it is declared, ``field(metadata=hook(...))``:

- ``key``: the dict's key when it is not the attribute's name (RunSpec's ``time_control`` is ``tc``);
- ``encode``/``decode``: a form of its own (a TimeControl as its text); ``decode`` gets the value and the fields
  read so far (an opening book is read under the variant read before it). With ``X | None``, the hook sees only
  the values that are not None;
- ``missing``: what the key's absence meant in files written before the field existed, when that is not the
  field's default (journals from before interleaving played encounter by encounter: ``missing=False``);
- ``inline``: a nested dataclass written as its fields, under their own keys, in the dict of the class that holds it
  (at the field's place) and read from it: a value that became one type after its fields had been written flat
  (RunSpec's ``game``, whose fields the journal has always kept beside the run's). Its keys must not meet the
  holder's (a TypeError when the plan is made); in a row it is a nested dict as any other.

A key absent from the dict gives the field's ``missing``, else its default; a field with neither is required.
Keys the dataclass does not know are ignored (the journal's header keeps ``schedule`` beside the spec's fields).
Fields declared ``init=False`` are derived, and neither written nor read.

Speed: for each class, once its values have been written or read :data:`GENERATE_AFTER` times (before, by the slow
path: a short run does not pay for writing coders), an encoder and a decoder of its own are written from these
declarations (Python source compiled once, as dataclasses write ``__init__``; see :class:`_Generator`), with every
check above. A
``@typing.final`` class's nested values and rows are written inline, and its ``to_dict`` method marked
:func:`generated` becomes the encoder itself: a GameRecord is written as fast as the hand-written method did
(``benchmarks/codec.py``). The plan read field by field at each call stays as the reference the generated code is
tested against (``tests/test_serialized.py``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import threading
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

__all__ = ["Hook", "from_dict", "from_row", "generated", "hook", "rows", "to_dict", "to_row"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_META: Final = "quarto_arena.codec"
_GENERATED: Final = "_quarto_arena_codec_generated"
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
    rows: type | None = None
    """Set by :func:`rows`: the field is a tuple of this class written as rows (the generated coder inlines them)."""
    inline: bool = False
    """The field (a dataclass) is written as its fields in the holder's dict."""


def hook(
    key: str | None = None,
    *,
    encode: Encode | None = None,
    decode: Decode | None = None,
    missing: Any = _ABSENT,
    inline: bool = False,
) -> dict[str, Any]:
    """Field metadata for ``dataclasses.field(metadata=...)``: a :class:`Hook`."""
    return {_META: Hook(key, encode, decode, missing, inline=inline)}


def to_dict(obj: Any) -> dict[str, Any]:
    """Every field of the dataclass instance ``obj`` as plain JSON/msgpack data (the inverse of :func:`from_dict`)."""
    encode = _ENCODERS.get(type(obj))
    if encode is None:
        coder = _coder_after_uses(type(obj))
        if coder is None:
            return _slow_to_dict(obj)
        encode = coder.encode
    return encode(obj)


def from_dict(cls: type[T], d: Mapping[str, Any]) -> T:
    """An instance of the dataclass ``cls`` from :func:`to_dict`'s data; KeyError, TypeError or ValueError (or the
    class's own validation error) on bad data."""
    coder = _CODERS.get(cls) or _coder_after_uses(cls)
    if coder is None:
        return _slow_from_dict(cls, d)
    result: T = coder.decode(d)
    return result


def to_row(obj: Any) -> list[Any]:
    """The fields of ``obj`` as a list, in declaration order (a compact form for many small values)."""
    cls = type(obj)
    coder = _CODERS.get(cls) or _coder_after_uses(cls)
    if coder is None:
        return _slow_to_row(obj)
    return coder.encode_row(obj)


def from_row(cls: type[T], row: Sequence[Any]) -> T:
    """The inverse of :func:`to_row`; a shorter row (written before the later fields existed) leaves them at their
    defaults."""
    coder = _CODERS.get(cls) or _coder_after_uses(cls)
    if coder is None:
        return _slow_from_row(cls, row)
    result: T = coder.decode_row(row)
    return result


GENERATE_AFTER = 16
"""Calls a class's values take on the slow path before its coder is generated. Writing a coder costs about as much
as a few hundred calls of the slow path (a few milliseconds a class, eight classes in a run): a short run (a 2-game
``play``, ``show``) would spend more on writing them than they save it; a long run writes each once, early."""
_USES: dict[type, int] = {}


def _coder_after_uses(cls: type) -> _Coder | None:
    """The class's coder once it has been used :data:`GENERATE_AFTER` times (written now if need be), else None:
    the caller takes the slow path. (Counted without the lock: a lost count under threads only delays the coder.)"""
    uses = _USES.get(cls, 0)
    if uses < GENERATE_AFTER:
        _USES[cls] = uses + 1
        return None
    return _coder(cls)


def generated(method: F) -> F:
    """Marks the ``to_dict`` method of a ``@typing.final`` dataclass, whose body is ``return codec.to_dict(self)``:
    once the class's coder is written (after :data:`GENERATE_AFTER` calls), the method is replaced by the generated
    encoder itself,
    so that writing a record costs one call, as a hand-written method did."""
    setattr(method, _GENERATED, True)
    return method


# The slow path: the plan read field by field at each call. It is what the generated coders below must agree with
# (tests/test_serialized.py compares them on samples of every class), and the coders fall back to its converters for
# the rarer types.


def _slow_to_dict(obj: Any) -> dict[str, Any]:
    out = {}
    for f in _plan(type(obj)):
        value = getattr(obj, f.name)
        if f.inline:
            out.update(to_dict(value))
        else:
            out[f.key] = value if f.as_is else f.encode(value)
    return out


def _slow_from_dict(cls: type[T], d: Mapping[str, Any]) -> T:
    if not isinstance(d, Mapping):
        raise TypeError(f"expected a mapping for {cls.__name__}, not {type(d).__name__}")
    values: dict[str, Any] = {}
    for f in _plan(cls):
        if f.inline:
            values[f.name] = from_dict(f.type, d)
            continue
        raw = d.get(f.key, _ABSENT)
        if raw is _ABSENT:
            if f.missing is None:
                raise KeyError(f.key)
            values[f.name] = f.missing()
        else:
            values[f.name] = f.decode(raw, values)
    return cls(**values)


def _slow_to_row(obj: Any) -> list[Any]:
    return [getattr(obj, f.name) if f.as_is else f.encode(getattr(obj, f.name)) for f in _plan(type(obj))]


def _slow_from_row(cls: type[T], row: Sequence[Any]) -> T:
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

    return {_META: Hook(encode=lambda values: [to_row(x) for x in values], decode=decode, rows=cls)}


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    key: str
    encode: Encode
    decode: Decode
    missing: Callable[[], Any] | None  # the value of an absent key; None: required
    as_is: bool  # written as it is (str, int, float, bool, or None): no call per value
    type: Any  # the field's type hint
    hooked: bool  # encode or decode comes from a hook
    rows: type | None  # a tuple of this class written as rows (a :func:`rows` hook on a type that is not ``| None``)
    inline: bool  # a dataclass written as its fields in the holder's dict (an ``inline`` hook)


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
        hooked = h.encode is not None or h.decode is not None
        rows_of = h.rows if h.rows is not None and _optional(tp) is None else None
        if h.inline and not (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
            raise TypeError(f"{cls.__name__}.{f.name}: only a dataclass is written inline, not {tp}")
        plan.append(_Field(f.name, key, enc, dec, missing, as_is, tp, hooked, rows_of, h.inline))
    keys = [g.key for f in plan for g in (_plan(f.type) if f.inline else (f,))]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise TypeError(f"{cls.__name__}: {', '.join(twice)} written twice: a field inline needs keys of its own")
    return tuple(plan)


def _scalar_type(tp: Any) -> bool:
    """True for str, int, float and bool, alone or ``| None``, and for a dict of them: written as they are (a dict
    is the object's own, not a copy: what to_dict gives is for writing, not for changing)."""
    inner = _optional(tp)
    tp = inner if inner is not None else tp
    if typing.get_origin(tp) is dict:
        return all(a in (str, int, float, bool) for a in typing.get_args(tp))
    return tp in (str, int, float, bool)


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


# The generated coders. As dataclasses generate ``__init__``, the encoder and decoder of each class are Python source
# written once from its plan and compiled with ``exec``, so that a call does no per-field lookups, dispatch or calls
# for plain types. What the source may contain: the attribute names of the fields of our own dataclasses and the
# keys their hooks declare (both checked to be identifiers), and names the generator makes up. Every value (a
# default, an enum's members, a hook, a class) is passed in the namespace, never as text, and no text read from a
# file or a peer ever reaches the source. The generated code must give what the slow path above gives, errors
# included (tests/test_serialized.py compares the two on samples of every class).


@dataclass(frozen=True, slots=True)
class _Coder:
    encode: Callable[[Any], dict[str, Any]]
    decode: Callable[[Any], Any]
    encode_row: Callable[[Any], list[Any]]
    decode_row: Callable[[Any], Any]


_CODERS: dict[type, _Coder] = {}
_ENCODERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
"""Each class's ``_CODERS[cls].encode``, for the call made once per game."""
_LOCK: Final = threading.RLock()
_BUILDING: set[type] = set()
"""The classes whose coder is being generated (a class nested in itself is coded through the public calls)."""

_CHECKS: Final = {str: ("", "a string"), int: (" or isinstance(v, bool)", "an integer"), bool: ("", "true or false")}
"""Type -> (the check's extra condition, what the message says it expected)."""


def _coder(cls: type) -> _Coder:
    with _LOCK:  # one thread at a time writes coders (_BUILDING is about its own)
        coder = _CODERS.get(cls)
        if coder is None:
            _BUILDING.add(cls)
            try:
                coder = _CODERS[cls] = _Generator(cls).build()
                _ENCODERS[cls] = coder.encode
                method = cls.__dict__.get("to_dict")
                if _final(cls) and callable(method) and getattr(method, _GENERATED, False):
                    type.__setattr__(cls, "to_dict", functools.update_wrapper(coder.encode, method))
            finally:
                _BUILDING.discard(cls)
        return coder


def _wrong(key: str, expected: str, v: Any) -> TypeError:
    return TypeError(f"{key}: expected {expected}, not {type(v).__name__}")


def _not_a(what: str, cls: type, v: Any) -> TypeError:
    return TypeError(f"expected {what} for {cls.__name__}, not {type(v).__name__}")


def _not_rows(cls: type, v: Any) -> TypeError:
    return TypeError(f"expected a list of {cls.__name__} rows, not {type(v).__name__}")


def _final(cls: type) -> bool:
    """True for a class declared ``@typing.final``: no value of it can be of a subclass with more fields, so its
    fields are written inline with no check of the value's class."""
    return getattr(cls, "__final__", False) is True


def _checked(plan: tuple[_Field, ...]) -> tuple[_Field, ...]:
    for f in plan:
        _identifier(f.name)
    return plan


def _identifier(text: str) -> str:
    """An attribute name (of our own declaration) as a string literal; only identifiers."""
    if not text.isidentifier():
        raise TypeError(f"{text!r} is not an identifier: the codec generates no source from it")
    return repr(text)


class _Generator:
    """Writes and compiles the coder of one class."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.plan = _plan(cls)
        self.ns: dict[str, Any] = {
            "_ABSENT": _ABSENT,
            "_Mapping": Mapping,
            "_Sequence": Sequence,
            "_wrong": _wrong,
            "_not_a": _not_a,
            "_not_rows": _not_rows,
            "_to_dict": to_dict,
            "_to_row": to_row,
            "_from_dict": from_dict,
            "_cls": cls,
        }
        self.count = 0

    def const(self, value: Any) -> str:
        """A new name for ``value`` in the namespace."""
        self.count += 1
        name = f"_c{self.count}"
        self.ns[name] = value
        return name

    def key(self, key: str) -> str:
        """A dict's key in the source: a literal if it is an identifier (the dict is then built faster), else by
        name from the namespace."""
        return repr(key) if key.isidentifier() else self.const(key)

    def var(self) -> str:
        self.count += 1
        return f"x{self.count}"

    def build(self) -> _Coder:
        for f in self.plan:
            _identifier(f.name)
        obj = "obj"
        items = self.items(self.plan, obj)
        row = ", ".join(self.encode_field(f, obj) for f in self.plan)
        lines = [
            "def encode(obj):",
            f"    return {{{items}}}",
            "def encode_row(obj):",
            f"    return [{row}]",
            *self.decoder(),
            *self.row_decoder(),
        ]
        exec("\n".join(lines), self.ns)
        return _Coder(self.ns["encode"], self.ns["decode"], self.ns["encode_row"], self.ns["decode_row"])

    # Encoding: an expression per field.

    def items(self, plan: Sequence[_Field], obj: str) -> str:
        """The items of a dict display of ``obj``'s fields (an inline field's unpacked)."""
        return ", ".join(
            f"**{self.encode_field(f, obj)}" if f.inline else f"{self.key(f.key)}: {self.encode_field(f, obj)}"
            for f in plan
        )

    def encode_field(self, f: _Field, obj: str) -> str:
        value = f"{obj}.{f.name}"
        if f.as_is:
            return value
        if f.rows is not None and f.rows not in _BUILDING:
            x = self.var()
            cells = ", ".join(self.encode_field(g, x) for g in _checked(_plan(f.rows)))
            if _final(f.rows):
                return f"[[{cells}] for {x} in {value}]"
            return f"[[{cells}] if {x}.__class__ is {self.const(f.rows)} else _to_row({x}) for {x} in {value}]"
        if f.hooked:
            return f"{self.const(f.encode)}({value})"
        return self.encode_value(f.type, value, f.key)

    def encode_value(self, tp: Any, value: str, key: str) -> str:
        """An expression of ``value`` (a name or an attribute) in plain form, as :func:`_by_type`'s encoder."""
        inner = _optional(tp)
        if inner is not None:
            e = self.encode_value(inner, value, key)
            return value if e == value else f"(None if {value} is None else {e})"
        if tp is Any or tp in (str, int, float, bool):
            return value
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin in (tuple, list) and (origin is list or (len(args) == 2 and args[1] is Ellipsis)):
            x = self.var()
            item = self.encode_value(args[0], x, key)
            return f"list({value})" if item == x else f"[{item} for {x} in {value}]"
        if origin is dict:
            k, x = self.var(), self.var()
            ke, xe = self.encode_value(args[0], k, key), self.encode_value(args[1], x, key)
            return value if (ke, xe) == (k, x) else f"{{{ke}: {xe} for {k}, {x} in {value}.items()}}"
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return f"{value}._value_"  # what .value returns, without the call of its descriptor
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            if tp in _BUILDING or "." in value:
                return f"_to_dict({value})"  # by the value's own class, as the slow path does
            items = self.items(_checked(_plan(tp)), value)
            if _final(tp):
                return f"{{{items}}}"
            return f"({{{items}}} if {value}.__class__ is {self.const(tp)} else _to_dict({value}))"
        enc, _ = _by_type(tp, key)
        return f"{self.const(enc)}({value})"

    # Decoding: statements per field that set its variable from ``v``.

    def decoder(self) -> list[str]:
        lines = [
            "def decode(d):",
            "    if d.__class__ is not dict and not isinstance(d, _Mapping):",
            "        raise _not_a('a mapping', _cls, d)",
            "    get = d.get",
        ]
        for i, f in enumerate(self.plan):
            if f.inline:
                lines.append(f"    a{i} = {self.decoder_of(f.type, f.key)}(d)")
                continue
            lines.append(f"    v = get({self.key(f.key)}, _ABSENT)")
            lines.append("    if v is _ABSENT:")
            lines.append(f"        {self.absent(f, i)}")
            lines.append("    else:")
            lines.extend(self.decode_field(f, i, "        "))
        return [*lines, f"    return _cls({self.arguments()})"]

    def row_decoder(self) -> list[str]:
        lines = [
            "def decode_row(row):",
            "    if row.__class__ is not list and (isinstance(row, (str, bytes)) or not isinstance(row, _Sequence)):",
            "        raise _not_a('a list', _cls, row)",
            "    n = len(row)",
            f"    if n > {len(self.plan)}:",
            f"        raise ValueError(f'{{_cls.__name__}} has {len(self.plan)} fields, not {{n}}')",
        ]
        for i, f in enumerate(self.plan):
            lines.append(f"    if n > {i}:")
            lines.append(f"        v = row[{i}]")
            lines.extend(self.decode_field(f, i, "        "))
            lines.append("    else:")
            lines.append(f"        {self.absent(f, i)}")
        return [*lines, f"    return _cls({self.arguments()})"]

    def arguments(self) -> str:
        """The call's arguments: by position while ``__init__`` takes the fields in that order (a call with them
        by name binds them the same, and costs more), then by name."""
        try:
            parameters = list(inspect.signature(self.cls).parameters.values())
        except (TypeError, ValueError):
            parameters = []
        positional = 0
        for f, p in zip(self.plan, parameters, strict=False):
            if p.name != f.name or p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                break
            positional += 1
        return ", ".join(f"a{i}" if i < positional else f"{f.name}=a{i}" for i, f in enumerate(self.plan))

    def absent(self, f: _Field, i: int) -> str:
        if f.missing is None:
            return f"raise KeyError({self.const(f.key)})"
        return f"a{i} = {self.const(f.missing)}()"

    def decode_field(self, f: _Field, i: int, indent: str) -> list[str]:
        target = f"a{i}"
        if f.rows is not None and f.rows not in _BUILDING:
            rows_cls = self.const(f.rows)
            return [
                f"{indent}if v.__class__ is not list and (",
                f"{indent}    isinstance(v, (str, bytes, _Mapping)) or not isinstance(v, _Sequence)",
                f"{indent}):",
                f"{indent}    raise _not_rows({rows_cls}, v)",
                f"{indent}{target} = tuple(map({self.const(_coder(f.rows).decode_row)}, v))",
            ]
        if f.hooked:
            earlier = ", ".join(f"{_identifier(g.name)}: a{j}" for j, g in enumerate(self.plan[:i]))
            return [f"{indent}{target} = {self.const(f.decode)}(v, {{{earlier}}})"]
        return self.decode_value(f.type, target, f.key, indent)

    def decode_value(self, tp: Any, target: str, key: str, indent: str) -> list[str]:
        """Statements that check ``v`` and set ``target`` to its value of type ``tp``, as :func:`_by_type`'s
        decoder."""
        k = self.const(key)
        inner = _optional(tp)
        if inner is not None:
            return [
                f"{indent}if v is None:",
                f"{indent}    {target} = None",
                f"{indent}else:",
                *self.decode_value(inner, target, key, indent + "    "),
            ]
        if tp is Any:
            return [f"{indent}{target} = v"]
        if tp in _CHECKS:
            extra, expected = _CHECKS[tp]
            return [
                f"{indent}if not isinstance(v, {tp.__name__}){extra}:",
                f"{indent}    raise _wrong({k}, {expected!r}, v)",
                f"{indent}{target} = v",
            ]
        if tp is float:
            return [
                f"{indent}if isinstance(v, bool) or not isinstance(v, (int, float)):",
                f"{indent}    raise _wrong({k}, 'a number', v)",
                f"{indent}{target} = float(v)",
            ]
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin in (tuple, list) and (origin is list or (len(args) == 2 and args[1] is Ellipsis)):
            lines = [
                f"{indent}if v.__class__ is not list and (",
                f"{indent}    isinstance(v, (str, bytes, _Mapping)) or not isinstance(v, _Sequence)",
                f"{indent}):",
                f"{indent}    raise _wrong({k}, 'a list', v)",
            ]
            if args[0] in _CHECKS:
                extra, expected = _CHECKS[args[0]]
                return [
                    *lines,
                    f"{indent}for x in v:",
                    f"{indent}    if not isinstance(x, {args[0].__name__}){extra.replace('(v', '(x')}:",
                    f"{indent}        raise _wrong({k}, {expected!r}, x)",
                    f"{indent}{target} = {origin.__name__}(v)",
                ]
            item = self.decoder_of(args[0], key)
            return [*lines, f"{indent}{target} = {origin.__name__}(map({item}, v))"]
        if origin is dict and args[0] in _CHECKS and args[1] in _CHECKS:
            (key_extra, key_expected), (extra, expected) = _CHECKS[args[0]], _CHECKS[args[1]]
            return [
                f"{indent}if v.__class__ is not dict and not isinstance(v, _Mapping):",
                f"{indent}    raise _wrong({k}, 'a mapping', v)",
                f"{indent}for y, x in v.items():",
                f"{indent}    if not isinstance(y, {args[0].__name__}){key_extra.replace('(v', '(y')}:",
                f"{indent}        raise _wrong({k}, {key_expected!r}, y)",
                f"{indent}    if not isinstance(x, {args[1].__name__}){extra.replace('(v', '(x')}:",
                f"{indent}        raise _wrong({k}, {expected!r}, x)",
                f"{indent}{target} = dict(v)",
            ]
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            members = {m.value: m for m in tp.__members__.values()}
            return [
                f"{indent}try:",
                f"{indent}    {target} = {self.const(members)}[v]",
                f"{indent}except (KeyError, TypeError):",
                f"{indent}    {target} = {self.const(tp)}(v)",
            ]
        return [f"{indent}{target} = {self.decoder_of(tp, key)}(v)"]

    def decoder_of(self, tp: Any, key: str) -> str:
        """The name of a one-argument decoder of ``tp``: a class's generated one, else the slow path's."""
        if isinstance(tp, type) and dataclasses.is_dataclass(tp) and tp not in _BUILDING:
            return self.const(_coder(tp).decode)
        return self.const(_by_type(tp, key)[1])
