"""Which engines play: engines from the command line or an engines file, their names, and their options.

An engine on the command line is one word: a built-in engine (``greedy``), a ZeroMQ endpoint
(``tcp://127.0.0.1:5555``, ``ipc:///tmp/bot.sock``), a bot that connects in to the arena's server
(``remote:NAME``, named NAME), a command line (``"./bot --fast"``), a name from the engines file, or ``NAME=WORD``
to name any of these (``new=./build/bot``, ``g2=greedy``).

Names. A name is what records, tables, PGN tags and log file names show, so it is checked: 1 to 64 characters from
``A-Z a-z 0-9 _ . + -``, starting with a letter or digit, without ``..``. An engine given without a name is named
after what it is: a built-in by its name, a command after its program file (``./build/bot --fast`` is ``bot``;
``python3 bot.py`` is ``bot`` and ``python -m pkg.mybot`` is ``mybot``: interpreters are skipped), a ZeroMQ engine by
its own ``id name`` (:func:`name_endpoints`, which asks it). Two engines given the same name is a usage error; two
unnamed engines that would share a name are numbered ``greedy``, ``greedy-2``, ...

Options. ``--option [ENGINE:]ID=VALUE`` sets a UQI option of one engine, or of every engine without ``ENGINE:``
(:func:`apply_options`); it overrides the engines file. Values are checked against the engine's declared type when it
starts.

The engines file (TOML) is documented in :func:`load_engines_file`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from quarto_arena.engines.registry import BUILTIN
from quarto_arena.engines.registry import command as builtin_command

from . import codec
from .engine import EngineConfig
from .errors import ArenaError, ExitStatus
from .timecontrol import TimeControl

__all__ = [
    "MAX_ENGINES",
    "NAME_RULE",
    "EngineWord",
    "RosterError",
    "apply_options",
    "check_name",
    "config_from_dict",
    "config_to_dict",
    "default_name",
    "engine_config",
    "load_engines_file",
    "name_endpoints",
    "parse_option_setting",
    "resolve_engines",
    "resolve_roster",
]

MAX_ENGINES: Final = 200
"""Engines in one run at most: the rating fit is quadratic in memory and cubic in time in their number."""
NAME_RULE: Final = "1-64 characters from A-Z a-z 0-9 _ . + -, starting with a letter or digit, without '..'"
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]{0,63}\Z")
_NAMED: Final = re.compile(r"([^=\s]+)=(.*)\Z", re.DOTALL)
_ENDPOINT_SCHEMES: Final = ("tcp://", "ipc://")
_REMOTE: Final = "remote:"
_KEYS: Final = frozenset({"name", "command", "args", "cwd", "endpoint", "remote", "options", "tc"})
#: Programs that run the engine rather than being it: the engine is named after what they run.
_INTERPRETERS: Final = frozenset(
    {"python", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "java", "ruby", "perl", "php", "lua"}
    | {"luajit", "julia", "Rscript", "dotnet", "mono", "sh", "bash", "dash", "zsh", "env", "exec", "nice", "taskset"}
    | {"uv", "uvx", "poetry", "pipx", "npx", "cargo", "go"}
)
_INTERPRETER_VERBS: Final = frozenset({"run", "exec", "-jar", "--", "-m"})
_MAX_FILE_BYTES: Final = 1 << 20


class RosterError(ArenaError, ValueError):
    """An engine argument, name, option setting or engines file that cannot be used; one line naming the problem."""

    status = ExitStatus.USAGE
    reason = "roster"


def check_name(name: str, where: str = "engine name") -> str:
    """Returns ``name`` when it is a valid engine name; raises :class:`RosterError` saying why not."""
    if not _NAME.match(name) or ".." in name:
        raise RosterError(f"{where} {_shown(name)} is not a valid name: use {NAME_RULE}")
    return name


def _shown(text: str) -> str:
    """A user-supplied string for an error message: quoted, control characters escaped, cut to 200 characters (as
    safe_text cuts a peer's string: a deep path a user typed must still be shown whole)."""
    shown = repr(text[:200])
    return shown if len(text) <= 200 else shown[:-1] + "...'"


def _sanitized(text: str) -> str:
    """``text`` made into a valid name (runs of other characters become ``-``), or ``engine`` when nothing is left."""
    name = re.sub(r"[^A-Za-z0-9_.+\-]+", "-", text)
    name = re.sub(r"\.{2,}", ".", name).strip("-_.+")[:64].rstrip("-_.+")
    return name if _NAME.match(name) else "engine"


def default_name(argv: Sequence[str]) -> str:
    """The name of an unnamed engine command: its program file, skipping interpreters (``node bot.js`` is ``bot``)."""
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        program = Path(word).name
        if i > 0 and "=" in word and not word.startswith("-"):  # env VAR=value ./bot
            i += 1
            continue
        stem = re.sub(r"[0-9.]+\Z", "", program)  # python3.11 -> python
        if stem in _INTERPRETERS or program in _INTERPRETER_VERBS or (i > 0 and word.startswith("-")):
            if word == "-m" and i + 1 < len(words):
                module = words[i + 1].rsplit(".", 1)
                return _sanitized(module[-1] if module[-1] != "__main__" or len(module) == 1 else module[0])
            i += 1
            continue
        return _sanitized(Path(program).stem if i > 0 or "." in program[1:] else program)
    return _sanitized(Path(words[0]).name) if words else "engine"


@dataclass(frozen=True, slots=True)
class EngineWord:
    """One engine as written on the command line, before names are settled."""

    config: EngineConfig
    """The engine (its name is provisional when ``explicit`` is False)."""
    explicit: bool
    """True when the user named it (``NAME=WORD`` or the engines file)."""


def engine_config(word: str, name: str | None = None) -> EngineConfig:
    """An engine from one command-line word (see the module documentation), without checking that it exists.

    ``NAME=WORD`` names it; ``name`` overrides both. Raises :class:`RosterError` for an empty or unreadable command
    line or an invalid name. Used by ``check``, which reports a missing program as a failed start.
    """
    return _word(word, name).config


def _word(word: str, name: str | None = None) -> EngineWord:
    text = word.strip()
    m = _NAMED.match(text)
    if m and not text.startswith(_ENDPOINT_SCHEMES):
        name = name or check_name(m.group(1))
        text = m.group(2).strip()
    elif name is not None:
        check_name(name)
    explicit = name is not None
    if text.startswith(_ENDPOINT_SCHEMES):
        return EngineWord(EngineConfig(name or _sanitized(text), endpoint=text), explicit)
    if text.startswith(_REMOTE):
        # A remote bot's name is its identity on the server (its key's name): it is given, not derived.
        bot = check_name(text[len(_REMOTE) :], "remote bot name")
        return EngineWord(EngineConfig(name or bot, remote=bot), True)
    if text in BUILTIN:
        return EngineWord(EngineConfig(name or text, command=tuple(builtin_command(text))), explicit)
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise RosterError(f"engine {_shown(word)}: {e}") from None
    if not argv:
        raise RosterError(f"engine {_shown(word)}: empty command")
    return EngineWord(EngineConfig(name or default_name(argv), command=tuple(argv)), explicit)


#: Interpreters of the scripts a bot is often written as, for the hint when a script is not executable.
_SCRIPT_INTERPRETERS: Final = {
    ".py": "python3",
    ".js": "node",
    ".mjs": "node",
    ".sh": "sh",
    ".rb": "ruby",
    ".pl": "perl",
}


def _resolved_program(word: str, config: EngineConfig, choices: Iterable[str]) -> EngineConfig:
    """Checks that a command's program exists; a path is made absolute so a resume from elsewhere still finds it."""
    program = config.command[0]
    if "/" not in program:
        if shutil.which(program) is not None:
            return config
        hint = f"; to run the file here, write ./{program}" if Path(program).is_file() else ""
        raise RosterError(
            f"unknown engine {_shown(word)}: not in the engines file, not a built-in ({', '.join(choices)}),"
            f" not a program on the PATH{hint}"
        )
    exe = Path(program)
    if not exe.exists():
        raise RosterError(f"engine {_shown(word)}: {program} does not exist")
    if exe.is_dir():
        raise RosterError(f"engine {_shown(word)}: {program} is not an executable file")
    if not os.access(exe, os.X_OK):
        interpreter = _SCRIPT_INTERPRETERS.get(exe.suffix.lower())
        how = f"chmod +x {program}" + (" (its first line a #! line)" if interpreter else "")
        if interpreter is not None:
            how += f', or run it with its interpreter: "{interpreter} {program}"'
        raise RosterError(f"engine {_shown(word)}: {program} is not an executable file: {how}")
    return replace(config, command=(os.path.abspath(exe), *config.command[1:]))


def _from_word(word: str, known: Mapping[str, EngineConfig]) -> EngineWord:
    """One engine of a run from a command-line word: a name from the engines file first, then :func:`_word`."""
    text = word.strip()
    m = _NAMED.match(text)
    if m and not text.startswith(_ENDPOINT_SCHEMES):
        if m.group(1) in known:
            raise RosterError(f"engine {_shown(word)}: {m.group(1)!r} is already an engine of the engines file")
        if m.group(2).strip() in known:
            return EngineWord(replace(known[m.group(2).strip()], name=check_name(m.group(1))), True)
    if text in known:
        return EngineWord(known[text], True)
    parsed = _word(text)
    if parsed.config.command and text not in BUILTIN and parsed.config.command[0] not in BUILTIN:
        config = _resolved_program(word, parsed.config, [*known, *BUILTIN])
        return EngineWord(config, parsed.explicit)
    return parsed


def _settle_names(words: Sequence[EngineWord]) -> list[EngineConfig]:
    """Final names: a name given twice is an error; unnamed engines sharing a name are numbered ``-2``, ``-3``..."""
    explicit = Counter(w.config.name for w in words if w.explicit)
    twice = sorted(n for n, k in explicit.items() if k > 1)
    if twice:
        raise RosterError(f"engine name {twice[0]!r} is given twice; every engine needs its own name")
    taken = set(explicit)
    out = []
    for w in words:
        name = w.config.name
        if not w.explicit:
            base, k = name, 1
            while name in taken:
                k += 1
                name = f"{base[: 64 - len(str(k)) - 1]}-{k}"
            taken.add(name)
        out.append(w.config if name == w.config.name else replace(w.config, name=name))
    return out


def resolve_roster(words: Sequence[str], engines_file: Path | None = None) -> list[EngineWord]:
    """The engines of a run with their settled names, each marked explicit (named by the user) or not."""
    known = load_engines_file(engines_file) if engines_file is not None else {}
    entries = [_from_word(w, known) for w in words] if words else [EngineWord(c, True) for c in known.values()]
    if len(entries) > MAX_ENGINES:
        raise RosterError(f"{len(entries)} engines: one run takes at most {MAX_ENGINES}")
    return [EngineWord(c, w.explicit) for c, w in zip(_settle_names(entries), entries, strict=True)]


def resolve_engines(words: Sequence[str], engines_file: Path | None = None) -> list[EngineConfig]:
    """The engines of a run: the command-line words, or every engine of the file when there are none."""
    return [w.config for w in resolve_roster(words, engines_file)]


def parse_option_setting(text: str) -> tuple[str | None, str, str]:
    """``[ENGINE:]ID=VALUE`` -> (engine or None for every engine, option id, value); raises :class:`RosterError`."""
    key, eq, value = text.partition("=")
    engine, colon, option = key.rpartition(":")
    if not eq or not option or (colon and not engine):
        raise RosterError(f"--option {_shown(text)}: expected [ENGINE:]ID=VALUE, e.g. minimax:Depth=4 or Seed=1")
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", option):
        raise RosterError(f"--option {_shown(text)}: {_shown(option)} is not an option id (letters, digits, _ . -)")
    return (engine or None), option, value


def apply_options(configs: Sequence[EngineConfig], settings: Sequence[str]) -> list[EngineConfig]:
    """The engines with the ``--option`` settings applied in order (an engine's own setting after every-engine ones)."""
    parsed = [parse_option_setting(s) for s in settings]
    names = {c.name for c in configs}
    for engine, _, _ in parsed:
        if engine is not None and engine not in names:
            raise RosterError(f"--option {engine}:...: no engine is named {engine!r} (engines: {', '.join(names)})")
    out = []
    for config in configs:
        options = dict(config.options)
        for engine, option, value in sorted(parsed, key=lambda p: p[0] is not None):
            if engine in (None, config.name):
                for old in [k for k in options if k.lower() == option.lower()]:
                    del options[old]
                options[option] = value
        out.append(replace(config, options=options))
    return out


async def name_endpoints(configs: Sequence[EngineConfig], explicit: set[str], **session: Any) -> list[EngineConfig]:
    """Names each unnamed ZeroMQ engine after its own ``id name`` (one handshake); others are returned as they are.

    ``session`` goes to :class:`~quarto_arena.arena.engine.EngineSession` (deadlines). An engine that cannot be
    reached or does not answer raises its :class:`~quarto_arena.arena.engine.EngineError` at once.
    """
    from .engine import EngineSession

    out = list(configs)
    taken = {c.name for c in configs}
    for i, config in enumerate(configs):
        if config.endpoint is None or config.name in explicit:
            continue
        s = EngineSession(replace(config, options={}), **session)
        try:
            ident = await s.start()
        finally:
            await s.quit()
        name = _sanitized(ident.name or "")
        if name != "engine":
            base, k = name, 1
            while name in taken - {config.name}:
                k += 1
                name = f"{base[: 64 - len(str(k)) - 1]}-{k}"
            taken.discard(config.name)
            taken.add(name)
            out[i] = replace(config, name=name)
    return out


# --- the engines file -------------------------------------------------------------------------------------------


def _where(path: Path, index: int, name: object) -> str:
    label = f"engine {_shown(name)}" if isinstance(name, str) else f"engine #{index}"
    return f"{path}: {label}"


def _split_command(text: str, where: str) -> list[str]:
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise RosterError(f"{where}: key 'command': cannot split {_shown(text)}: {e}") from None
    if not argv:
        raise RosterError(f"{where}: key 'command' is empty")
    return argv


def _option_text(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return None


def _plain_text(value: str, where: str, key: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise RosterError(f"{where}: key {key!r} holds a control character")
    return value


def _entry(path: Path, index: int, raw: object) -> EngineConfig:
    if not isinstance(raw, dict):
        raise RosterError(f"{path}: engine #{index} is not a table")
    name = raw.get("name")
    where = _where(path, index, name)
    if not isinstance(name, str):
        raise RosterError(f"{where}: key 'name' is missing or not a string")
    check_name(name, f"{path}: engine #{index}: name")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise RosterError(f"{where}: unknown key {_shown(unknown[0])} (known: {', '.join(sorted(_KEYS))})")
    command = raw.get("command")
    endpoint = raw.get("endpoint")
    remote = raw.get("remote")
    if sum(v is not None for v in (command, endpoint, remote)) != 1:
        raise RosterError(f"{where}: give exactly one of the keys 'command', 'endpoint' and 'remote'")
    if remote is not None:
        if not isinstance(remote, str):
            raise RosterError(f"{where}: key 'remote' must be a string (the name the bot connects as)")
        check_name(remote, f"{where}: key 'remote':")
    argv: list[str] = []
    if isinstance(command, str):
        argv = builtin_command(command) if command in BUILTIN else _split_command(command, where)
    elif isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        argv = list(command)
    elif command is not None:
        raise RosterError(f"{where}: key 'command' must be a string or a non-empty array of strings")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise RosterError(f"{where}: key 'args' must be an array of strings")
    if args and command is None:
        raise RosterError(f"{where}: key 'args' goes with 'command', not with 'endpoint' or 'remote'")
    argv.extend(args)
    for word in argv:
        if "\0" in word:
            raise RosterError(f"{where}: key 'command' holds a NUL character")
    if argv and "/" in argv[0] and not os.path.isabs(argv[0]) and raw.get("cwd") is None:
        # Relative to the file, not to wherever the arena happens to run (a resume may run elsewhere).
        argv[0] = os.path.abspath(path.parent / argv[0])
    if endpoint is not None and (not isinstance(endpoint, str) or not endpoint.startswith(_ENDPOINT_SCHEMES)):
        raise RosterError(f"{where}: key 'endpoint' must be a string starting with tcp:// or ipc://")
    if endpoint is not None:
        _plain_text(endpoint, where, "endpoint")
    cwd = raw.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str) or "\0" in cwd:
            raise RosterError(f"{where}: key 'cwd' must be a string (a directory)")
        resolved = (path.parent / cwd).resolve()
        if not resolved.is_dir():
            raise RosterError(f"{where}: key 'cwd': {resolved} is not a directory")
        cwd = str(resolved)
    options = raw.get("options", {})
    if not isinstance(options, dict):
        raise RosterError(f"{where}: key 'options' must be a table")
    texts: dict[str, str] = {}
    for key, value in options.items():
        text = _option_text(value)
        if text is None:
            raise RosterError(f"{where}: key 'options.{key}' must be a string, number or boolean")
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", key):
            raise RosterError(f"{where}: key 'options.{_shown(key)}' is not an option id (letters, digits, _ . -)")
        texts[key] = _plain_text(text, where, f"options.{key}")
    tc = raw.get("tc")
    time_control = None
    if tc is not None:
        if not isinstance(tc, str | int | float) or isinstance(tc, bool):
            raise RosterError(f"{where}: key 'tc' must be a string such as \"10+0.1\"")
        try:
            time_control = TimeControl.parse(str(tc))
        except ValueError as e:
            raise RosterError(f"{where}: key 'tc': {e}") from None
    return EngineConfig(
        name=name,
        command=tuple(argv),
        endpoint=endpoint,
        cwd=cwd,
        options=texts,
        time_control=time_control,
        remote=remote,
    )


def load_engines_file(path: Path) -> dict[str, EngineConfig]:
    """Reads an engines file; returns the engines by name in file order. Raises :class:`RosterError`.

    An engines file (TOML) lists engines as an array of tables::

        [[engine]]
        name = "minimax-4"                  # display name (required, unique; see the rule for names)
        command = "./bots/minimax"          # a string (split like a shell) or an array; a built-in's name;
                                            # a relative path is relative to this file (to cwd when cwd is given)
        args = ["--log", "mm.log"]          # more arguments, appended (optional)
        cwd = "bots"                        # working directory, relative to this file (optional)
        tc = "10+0.1"                       # this engine's own time control: time odds (optional)

        [engine.options]                    # UQI options set after the handshake (optional)
        Depth = 4
        Seed = 1

        [[engine]]
        name = "served"
        endpoint = "tcp://127.0.0.1:5555"   # an engine served over ZeroMQ, instead of a command

        [[engine]]
        name = "visitor"
        remote = "alice-bot"                # a bot that connects in to the arena's server (--listen)

    Option values may be strings, integers, floats or booleans (sent to the engine as text). Any other key is an
    error: a misspelt key must not be ignored silently. Every error names the file, the engine and the key.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise RosterError(f"{path}: no such engines file") from None
    except IsADirectoryError:
        raise RosterError(f"{path}: is a directory, not an engines file") from None
    except OSError as e:
        raise RosterError(f"{path}: cannot read the engines file: {e.strerror}") from None
    if len(raw) > _MAX_FILE_BYTES:
        raise RosterError(f"{path}: an engines file of more than {_MAX_FILE_BYTES >> 20} MB is not plausible")
    import tomllib  # only with --engines FILE: a run without one does not pay for the parser (start-up)

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise RosterError(f"{path}: not valid TOML: {' '.join(str(e).split())}") from None
    except RecursionError:
        raise RosterError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None
    unknown = sorted(set(data) - {"engine"})
    if unknown:
        raise RosterError(f"{path}: unknown top-level key {_shown(unknown[0])} (engines go in [[engine]] tables)")
    entries = data.get("engine")
    if not isinstance(entries, list) or not entries:
        raise RosterError(f"{path}: no engines: add [[engine]] tables")
    if len(entries) > MAX_ENGINES:
        raise RosterError(f"{path}: {len(entries)} engines; one run takes at most {MAX_ENGINES}")
    out: dict[str, EngineConfig] = {}
    for index, raw_entry in enumerate(entries, start=1):
        config = _entry(path, index, raw_entry)
        if config.name in out:
            raise RosterError(f"{_where(path, index, config.name)}: key 'name': {config.name!r} is used twice")
        out[config.name] = config
    return out


def config_to_dict(config: EngineConfig) -> dict[str, Any]:
    """An engine as plain msgpack/JSON types, for the journal header (the inverse of :func:`config_from_dict`)."""
    return codec.to_dict(config)


def config_from_dict(d: Mapping[str, Any]) -> EngineConfig:
    """Rebuilds an engine from :func:`config_to_dict` with its names checked; raises KeyError/TypeError/ValueError
    on bad data."""
    config = codec.from_dict(EngineConfig, d)
    check_name(config.name)
    if config.remote is not None:
        check_name(config.remote)
    return config
