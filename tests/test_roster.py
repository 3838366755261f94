"""Engines files, engine arguments, names and option settings: good ones load, every bad one is a one-line error.

The engines-file reader is also fuzzed: whatever bytes a file holds, it loads or raises RosterError, one line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quarto_arena.arena.roster import (
    MAX_ENGINES,
    RosterError,
    apply_options,
    check_name,
    config_from_dict,
    config_to_dict,
    default_name,
    engine_config,
    load_engines_file,
    resolve_engines,
)

EnginesFileError = RosterError


def engine_from_arg(word: str):  # type: ignore[no-untyped-def]
    (config,) = resolve_engines([word])
    return config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "engines.toml"
    path.write_text(text)
    return path


def test_a_full_engines_file(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    path = write(
        tmp_path,
        """
[[engine]]
name = "mm"
command = "python3 -m quarto_arena.engines.minimax"
args = ["--x", "a b"]
cwd = "bots"
tc = "10+0.1"
[engine.options]
Depth = 4
Fast = true
Style = "wild one"

[[engine]]
name = "g"
command = "greedy"

[[engine]]
name = "z"
endpoint = "tcp://127.0.0.1:5555"

[[engine]]
name = "local"
command = ["./bin/bot", "--fast"]
""",
    )
    engines = load_engines_file(path)
    assert list(engines) == ["mm", "g", "z", "local"]
    mm = engines["mm"]
    assert mm.command == ("python3", "-m", "quarto_arena.engines.minimax", "--x", "a b")
    assert mm.cwd == str((tmp_path / "bots").resolve())
    assert mm.options == {"Depth": "4", "Fast": "true", "Style": "wild one"}
    assert mm.time_control is not None
    assert mm.time_control.base_ms == 10000
    assert engines["g"].command == (sys.executable, "-m", "quarto_arena.engines.greedy")
    assert engines["z"].endpoint == "tcp://127.0.0.1:5555"
    assert engines["z"].command == ()
    # A relative path is relative to the file, so a resume from another directory still finds it.
    assert engines["local"].command == (str(tmp_path / "bin" / "bot"), "--fast")
    for config in engines.values():
        assert config_from_dict(config_to_dict(config)) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[engine]\n", "not valid TOML"),
        ("", "no engines"),
        ("engine = 3\n", "no engines"),
        ("[[engines]]\nname='a'\n", "unknown top-level key 'engines'"),
        ("[[engine]]\ncommand='random'\n", "engine #1: key 'name' is missing"),
        ("[[engine]]\nname=''\ncommand='random'\n", "engine #1: name '' is not a valid name"),
        ("[[engine]]\nname='a\"b'\ncommand='random'\n", "engine #1: name 'a\"b' is not a valid name"),
        ("[[engine]]\nname='../../../../tmp/x/PWNED'\ncommand='random'\n", "is not a valid name"),
        ('[[engine]]\nname="a\\u0000b"\ncommand="random"\n', "is not a valid name"),
        ('[[engine]]\nname="a\\u001b[31mred"\ncommand="random"\n', "is not a valid name"),
        ("[[engine]]\nname='" + "x" * 300 + "'\ncommand='random'\n", "is not a valid name"),
        ("[[engine]]\nname='a..b'\ncommand='random'\n", "is not a valid name"),
        ("[[engine]]\nname=3\ncommand='random'\n", "key 'name' is missing or not a string"),
        ("x = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ('[[engine]]\nname="a"\ncommand=["bot\\u0000"]\n', "NUL"),
        ("[[engine]]\nname='a'\ncommand='random'\noptions={'bad id'=1}\n", "is not an option id"),
        ('[[engine]]\nname="a"\ncommand="random"\noptions={S="a\\u001bb"}\n', "control character"),
        ("[[engine]]\nname='a'\ncommand='random'\nopts={}\n", "engine 'a': unknown key 'opts'"),
        ("[[engine]]\nname='a'\n", "engine 'a': give exactly one of the keys 'command', 'endpoint' and 'remote'"),
        ("[[engine]]\nname='a'\ncommand='random'\nendpoint='tcp://x:1'\n", "give exactly one"),
        ("[[engine]]\nname='a'\ncommand=3\n", "key 'command' must be a string or a non-empty array"),
        ("[[engine]]\nname='a'\ncommand=[]\n", "key 'command' must be a string or a non-empty array"),
        ("[[engine]]\nname='a'\ncommand='\"unclosed'\n", "key 'command': cannot split"),
        ("[[engine]]\nname='a'\ncommand='  '\n", "key 'command' is empty"),
        ("[[engine]]\nname='a'\ncommand='random'\nargs='x'\n", "key 'args' must be an array of strings"),
        ("[[engine]]\nname='a'\nendpoint='tcp://h:1'\nargs=['x']\n", "'args' goes with 'command'"),
        ("[[engine]]\nname='a'\nendpoint='http://h'\n", "key 'endpoint' must be a string starting with tcp://"),
        ("[[engine]]\nname='a'\ncommand='random'\ncwd='nowhere'\n", "key 'cwd': .*nowhere is not a directory"),
        ("[[engine]]\nname='a'\ncommand='random'\ncwd=1\n", "key 'cwd' must be a string"),
        ("[[engine]]\nname='a'\ncommand='random'\noptions=1\n", "key 'options' must be a table"),
        ("[[engine]]\nname='a'\ncommand='random'\noptions={Seed=[1]}\n", r"key 'options.Seed' must be a string"),
        ("[[engine]]\nname='a'\ncommand='random'\ntc='fast'\n", "engine 'a': key 'tc': time control 'fast'"),
        ("[[engine]]\nname='a'\ncommand='random'\ntc=true\n", "key 'tc' must be a string"),
        ("[[engine]]\nname='a'\ncommand='random'\n[[engine]]\nname='a'\ncommand='greedy'\n", "'a' is used twice"),
        ("engine = [1]\n", "engine #1 is not a table"),
    ],
)
def test_bad_engines_files(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(EnginesFileError, match=message) as info:
        load_engines_file(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def test_missing_and_binary_engines_files(tmp_path: Path) -> None:
    with pytest.raises(EnginesFileError, match="no such engines file"):
        load_engines_file(tmp_path / "nope.toml")
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(EnginesFileError, match="not valid TOML"):
        load_engines_file(path)


def test_engine_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bot = tmp_path / "bot"
    bot.write_text("#!/bin/sh\n")
    bot.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("")
    monkeypatch.chdir(tmp_path)
    assert engine_from_arg("greedy").command == (sys.executable, "-m", "quarto_arena.engines.greedy")
    assert engine_from_arg("g2=greedy").name == "g2"
    assert engine_from_arg("./bot").command == (str(bot),)
    assert engine_from_arg("./bot").name == "bot"
    with pytest.raises(RosterError, match=r"unknown engine 'bot'.*to run the file here, write \./bot"):
        engine_from_arg("bot")
    new = engine_from_arg("new=./bot --fast 'a b'")
    assert (new.name, new.command) == ("new", (str(bot), "--fast", "a b"))
    assert engine_from_arg("tcp://127.0.0.1:7000").endpoint == "tcp://127.0.0.1:7000"
    with pytest.raises(EnginesFileError, match="unknown engine 'nobody'"):
        engine_from_arg("nobody")
    with pytest.raises(EnginesFileError, match="does not exist"):
        engine_from_arg("./nobody")
    if os.geteuid() != 0:
        with pytest.raises(EnginesFileError, match="not an executable file"):
            engine_from_arg("./plain")
    with pytest.raises(EnginesFileError, match="not an executable file"):
        engine_from_arg(str(tmp_path))
    with pytest.raises(EnginesFileError, match="empty command"):
        engine_from_arg("  ")


def test_resolve_engines_from_file_and_arguments(tmp_path: Path) -> None:
    path = write(tmp_path, "[[engine]]\nname='a'\ncommand='random'\n[[engine]]\nname='b'\ncommand='greedy'\n")
    assert [c.name for c in resolve_engines([], path)] == ["a", "b"]
    assert [c.name for c in resolve_engines(["b", "random", "c=a"], path)] == ["b", "random", "c"]
    assert [c.name for c in resolve_engines(["random", "random"], None)] == ["random", "random-2"]
    with pytest.raises(EnginesFileError, match="'a' is already an engine of the engines file"):
        resolve_engines(["a=greedy"], path)
    # An explicit name is never renamed: given twice, it is an error; an unnamed engine makes way for it.
    with pytest.raises(RosterError, match="engine name 'a' is given twice"):
        resolve_engines(["a=greedy", "a=random"])
    assert [c.name for c in resolve_engines(["greedy", "greedy=random"])] == ["greedy-2", "greedy"]
    with pytest.raises(RosterError, match="not a valid name"):
        resolve_engines(["../x=greedy"])
    with pytest.raises(RosterError, match="at most"):
        resolve_engines(["random"] * (MAX_ENGINES + 1))


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["./build/bot", "--fast"], "bot"),
        (["node", "engines/js/quarto_bot.js"], "quarto_bot"),
        (["python3", "-m", "quarto_arena.engines.greedy"], "greedy"),
        (["/usr/bin/python3.11", "-u", "bots/my_bot.py", "--level", "3"], "my_bot"),
        (["java", "-jar", "target/Bot.jar"], "Bot"),
        (["env", "LEVEL=3", "./bot"], "bot"),
        (["uv", "run", "bot.py"], "bot"),
        (["./weird name!"], "weird-name"),
        (["cargo", "run"], "cargo"),
    ],
)
def test_unnamed_engines_are_named_after_their_program_not_the_interpreter(argv: list[str], name: str) -> None:
    assert default_name(argv) == name
    check_name(name)


def test_names_on_the_command_line() -> None:
    assert engine_config("node engines/js/quarto_bot.js").name == "quarto_bot"
    assert engine_config("python3 -m quarto_arena.engines.minimax").name == "minimax"
    for bad in ("", "-x", "a b", "a/b", "a..b", "x" * 65, "\x1b[31m", "a\x00"):
        with pytest.raises(RosterError, match="not a valid name"):
            check_name(bad)


def test_option_settings_per_engine_and_for_every_engine() -> None:
    a, b = resolve_engines(["minimax", "greedy"])
    a2, b2 = apply_options([a, b], ["Seed=7", "minimax:Depth=4", "minimax:seed=1"])
    assert a2.options == {"Depth": "4", "seed": "1"}  # its own setting wins over the every-engine one
    assert b2.options == {"Seed": "7"}
    with pytest.raises(RosterError, match="no engine is named 'nobody'"):
        apply_options([a, b], ["nobody:Depth=4"])
    for bad in ("Depth", "=4", ":Depth=4", "minimax:=4", "minimax:bad id=4"):
        with pytest.raises(RosterError, match="--option"):
            apply_options([a, b], [bad])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_fuzzed_engines_files_load_or_fail_in_one_line(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "engines.toml"
    path.write_bytes(data)
    try:
        engines = load_engines_file(path)
    except RosterError as e:
        assert "\n" not in str(e) and str(e).startswith(str(path))
        return
    for name in engines:
        check_name(name)


_ENTRY = st.fixed_dictionaries(
    {"name": st.text(max_size=12), "command": st.sampled_from(["random", "greedy", '"x'])},
    optional={"options": st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)},
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(_ENTRY, max_size=4))
def test_fuzzed_engine_tables(tmp_path_factory: pytest.TempPathFactory, entries: list[dict[str, object]]) -> None:
    lines = []
    for entry in entries:
        lines.append("[[engine]]")
        lines.append(f"name = {json.dumps(entry['name'])}")
        lines.append(f"command = {json.dumps(entry['command'])}")
        for key, value in dict(entry.get("options", {})).items():  # type: ignore[call-overload]
            lines.append(f"options.{json.dumps(key)} = {json.dumps(value)}")
    path = tmp_path_factory.mktemp("fuzz") / "engines.toml"
    path.write_text("\n".join(lines) + "\n")
    try:
        engines = load_engines_file(path)
    except RosterError as e:
        assert "\n" not in str(e)
        return
    assert list(engines) == [e["name"] for e in entries]
