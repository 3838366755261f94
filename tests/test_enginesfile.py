"""Engines files and engine arguments: good ones load, every bad one is a one-line error naming file, engine, key."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from quarto_arena.arena.enginesfile import (
    EnginesFileError,
    config_from_dict,
    config_to_dict,
    engine_from_arg,
    load_engines_file,
    resolve_engines,
)


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
        ("[[engine]]\nname=''\ncommand='random'\n", "key 'name' is missing or not a non-empty string"),
        ("[[engine]]\nname='a\"b'\ncommand='random'\n", "key 'name' must not contain quotes"),
        ("[[engine]]\nname='a'\ncommand='random'\nopts={}\n", "engine 'a': unknown key 'opts'"),
        ("[[engine]]\nname='a'\n", "engine 'a': give exactly one of the keys 'command' and 'endpoint'"),
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
    assert engine_from_arg("bot").command == (str(bot),)
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
