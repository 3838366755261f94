"""Engines for a tournament: from an engines file (TOML) or from the command line.

An engines file lists engines as an array of tables::

    [[engine]]
    name = "minimax-4"                      # display name (required, unique)
    command = "./bots/minimax"              # a string (split like a shell) or an array; a relative path is
                                            # relative to this file (to cwd when cwd is given)
    args = ["--log", "mm.log"]              # more arguments, appended (optional)
    cwd = "bots"                            # working directory, relative to this file (optional)
    tc = "10+0.1"                           # this engine's own time control: time odds (optional)

    [engine.options]                        # UQI options set after the handshake (optional)
    Depth = 4
    Seed = 1

    [[engine]]
    name = "served"
    endpoint = "tcp://127.0.0.1:5555"       # an engine served over ZeroMQ, instead of a command

``command`` may also be the name of a built-in engine (``random``, ``greedy``, ``minimax``). Option values may be
strings, integers, floats or booleans (written to the engine as text). Any other key is an error: a misspelt
key must not be ignored silently. Every error names the file, the engine and the key.

On the command line an engine is one word: a name from the engines file, a built-in engine, a ZeroMQ endpoint,
a command line (``./bot --fast``, named after the program), or ``NAME=WORD`` to name any of these
(``new=./build/bot --fast``, ``g2=greedy``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from quarto_arena.engines.registry import BUILTIN
from quarto_arena.engines.registry import command as builtin_command

from .engine import EngineConfig
from .match import distinct_names, engine_config
from .timecontrol import TimeControl

__all__ = [
    "EnginesFileError",
    "config_from_dict",
    "config_to_dict",
    "engine_from_arg",
    "load_engines_file",
    "resolve_engines",
]

_KEYS: Final = frozenset({"name", "command", "args", "cwd", "endpoint", "options", "tc"})
_ENDPOINT_SCHEMES: Final = ("tcp://", "ipc://")


class EnginesFileError(ValueError):
    """An engines file or an engine argument that cannot be used. The message is one line naming the problem."""


def _where(path: Path, index: int, name: object) -> str:
    label = f"engine {name!r}" if isinstance(name, str) else f"engine #{index}"
    return f"{path}: {label}"


def _split_command(text: str, where: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise EnginesFileError(f"{where}: key 'command': cannot split {text!r}: {e}") from None
    if not argv:
        raise EnginesFileError(f"{where}: key 'command' is empty")
    return argv


def _option_text(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return None


def _entry(path: Path, index: int, raw: object) -> EngineConfig:
    if not isinstance(raw, dict):
        raise EnginesFileError(f"{path}: engine #{index} is not a table")
    name = raw.get("name")
    where = _where(path, index, name)
    if not isinstance(name, str) or not name.strip():
        raise EnginesFileError(f"{where}: key 'name' is missing or not a non-empty string")
    if name != name.strip() or any(c in name for c in '"\n\r\t'):
        raise EnginesFileError(f"{where}: key 'name' must not contain quotes, tabs or line breaks or start/end blank")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise EnginesFileError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    command = raw.get("command")
    endpoint = raw.get("endpoint")
    if (command is None) == (endpoint is None):
        raise EnginesFileError(f"{where}: give exactly one of the keys 'command' and 'endpoint'")
    argv: list[str] = []
    if isinstance(command, str):
        argv = builtin_command(command) if command in BUILTIN else _split_command(command, where)
    elif isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        argv = list(command)
    elif command is not None:
        raise EnginesFileError(f"{where}: key 'command' must be a string or a non-empty array of strings")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise EnginesFileError(f"{where}: key 'args' must be an array of strings")
    if args and endpoint is not None:
        raise EnginesFileError(f"{where}: key 'args' goes with 'command', not with 'endpoint'")
    argv.extend(args)
    if argv and "/" in argv[0] and not os.path.isabs(argv[0]) and raw.get("cwd") is None:
        # Relative to the file, not to wherever the arena happens to run (a resume may run elsewhere).
        argv[0] = os.path.abspath(path.parent / argv[0])
    if endpoint is not None and (not isinstance(endpoint, str) or not endpoint.startswith(_ENDPOINT_SCHEMES)):
        raise EnginesFileError(f"{where}: key 'endpoint' must be a string starting with tcp:// or ipc://")
    cwd = raw.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str):
            raise EnginesFileError(f"{where}: key 'cwd' must be a string")
        resolved = (path.parent / cwd).resolve()
        if not resolved.is_dir():
            raise EnginesFileError(f"{where}: key 'cwd': {resolved} is not a directory")
        cwd = str(resolved)
    options = raw.get("options", {})
    if not isinstance(options, dict):
        raise EnginesFileError(f"{where}: key 'options' must be a table")
    texts: dict[str, str] = {}
    for key, value in options.items():
        text = _option_text(value)
        if text is None:
            raise EnginesFileError(f"{where}: key 'options.{key}' must be a string, number or boolean")
        texts[key] = text
    tc = raw.get("tc")
    time_control = None
    if tc is not None:
        if not isinstance(tc, str | int | float) or isinstance(tc, bool):
            raise EnginesFileError(f"{where}: key 'tc' must be a string such as \"10+0.1\"")
        try:
            time_control = TimeControl.parse(str(tc))
        except ValueError as e:
            raise EnginesFileError(f"{where}: key 'tc': {e}") from None
    return EngineConfig(
        name=name,
        command=tuple(argv),
        endpoint=endpoint,
        cwd=cwd,
        options=texts,
        time_control=time_control,
    )


def load_engines_file(path: Path) -> dict[str, EngineConfig]:
    """Reads an engines file; returns the engines by name in file order. Raises :class:`EnginesFileError`."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise EnginesFileError(f"{path}: no such engines file") from None
    except OSError as e:
        raise EnginesFileError(f"{path}: cannot read the engines file: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise EnginesFileError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - {"engine"})
    if unknown:
        raise EnginesFileError(f"{path}: unknown top-level key {unknown[0]!r} (engines go in [[engine]] tables)")
    entries = data.get("engine")
    if not isinstance(entries, list) or not entries:
        raise EnginesFileError(f"{path}: no engines: add [[engine]] tables")
    out: dict[str, EngineConfig] = {}
    for index, raw in enumerate(entries, start=1):
        config = _entry(path, index, raw)
        if config.name in out:
            raise EnginesFileError(f"{_where(path, index, config.name)}: key 'name': {config.name!r} is used twice")
        out[config.name] = config
    return out


def engine_from_arg(text: str, known: Mapping[str, EngineConfig] | None = None) -> EngineConfig:
    """One engine from a command-line word (see the module documentation); raises :class:`EnginesFileError`.

    Words that are not in ``known`` (the engines file) are read by :func:`~quarto_arena.arena.match.engine_config`,
    as ``play`` reads them; a program given by path must exist and is made absolute, so that the journal's copy
    still starts it when the tournament is resumed from another directory.
    """
    known = known or {}
    name, eq, spec = text.partition("=")
    if eq and name and name in known:
        raise EnginesFileError(f"engine {text!r}: {name!r} is already an engine of the engines file")
    if eq and spec.strip() in known:
        return replace(known[spec.strip()], name=name)
    if text.strip() in known:
        return known[text.strip()]
    try:
        config = engine_config(text)
    except ValueError as e:
        raise EnginesFileError(str(e)) from None
    if not config.command:
        return config
    exe = Path(config.command[0])
    if "/" not in config.command[0] and not exe.exists():
        if shutil.which(config.command[0]) is None:
            choices = [*known, *BUILTIN]
            raise EnginesFileError(
                f"unknown engine {text!r}: not in the engines file, not a built-in ({', '.join(choices)}),"
                " not a program; write NAME=COMMAND for any command"
            )
        return config
    if not exe.exists():
        raise EnginesFileError(f"engine {text!r}: {exe} does not exist")
    if exe.is_dir() or not os.access(exe, os.X_OK):
        raise EnginesFileError(f"engine {text!r}: {exe} is not an executable file")
    return replace(config, command=(os.path.abspath(exe), *config.command[1:]))


def resolve_engines(args: Sequence[str], engines_file: Path | None) -> list[EngineConfig]:
    """The engines of a tournament: the command-line words, or every engine of the file when there are none.

    Repeated display names get ``-2``, ``-3``... as in ``play``.
    """
    known = load_engines_file(engines_file) if engines_file is not None else {}
    configs = [engine_from_arg(a, known) for a in args] if args else list(known.values())
    return distinct_names(configs)


def config_to_dict(config: EngineConfig) -> dict[str, Any]:
    """An engine as plain msgpack/JSON types, for the journal header (the inverse of :func:`config_from_dict`)."""
    return {
        "name": config.name,
        "command": list(config.command),
        "endpoint": config.endpoint,
        "cwd": config.cwd,
        "options": dict(config.options),
        "tc": None if config.time_control is None else config.time_control.text,
    }


def config_from_dict(d: Mapping[str, Any]) -> EngineConfig:
    """Rebuilds an engine from :func:`config_to_dict`; raises KeyError/TypeError/ValueError on bad data."""
    tc = d["tc"]
    return EngineConfig(
        name=str(d["name"]),
        command=tuple(str(a) for a in d["command"]),
        endpoint=None if d["endpoint"] is None else str(d["endpoint"]),
        cwd=None if d["cwd"] is None else str(d["cwd"]),
        options={str(k): str(v) for k, v in dict(d["options"]).items()},
        time_control=None if tc is None else TimeControl.parse(str(tc)),
    )
