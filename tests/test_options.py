"""RunOptions, the one declaration of the run commands' options: each field is an option of the commands that take
it, reaches the run's spec (and the journal) when its journal form says it is kept, and is refused by --resume then."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from procs import cli
from quarto_arena.arena.options import LADDER, RUN_COMMANDS, Journal, RunOptions, flag, option_fields
from quarto_arena.arena.run import RunError, RunKind, RunSpec, build_spec

KIND = {"tournament": RunKind.TOURNAMENT, "play": RunKind.MATCH, "sprt": RunKind.SPRT}


def samples(tmp_path: Path) -> dict[str, Any]:
    """A value other than the default for every option the journal keeps."""
    engines = tmp_path / "engines.toml"
    engines.write_text('[[engine]]\nname = "r"\ncommand = "random"\n[[engine]]\nname = "g"\ncommand = "greedy"\n')
    openings = tmp_path / "openings.txt"
    openings.write_text("3 c47\n")
    return {
        "gauntlet": True,
        "games": 4,
        "rounds": 2,
        "elo0": -5.0,
        "elo1": 7.0,
        "alpha": 0.1,
        "beta": 0.1,
        "model": "logistic",
        "max_games": 10,
        "strict": True,
        "rating_interval": 5,
        "engines_file": str(engines),
        "option": ["Seed=3"],
        "concurrency": 2,
        "tc": "st=0.5",
        "timemargin": 80,
        "variant": "advanced",
        "attributes": "color,shape",
        "claim": "strict",
        "openings": str(openings),
        "random_openings": 3,
        "seed": 9,
        "fmt": "github",
        "interleave": False,
        "log_limit": "1M",
        "adjudicate": 6,
    }


def test_every_kept_option_reaches_the_spec_and_the_journal(tmp_path: Path) -> None:
    chosen = samples(tmp_path)
    kept = [f.name for f in fields(RunOptions) if flag(f.name).journal is Journal.KEPT]
    # An option added to RunOptions must get a sample here: this test then says whether build_spec carries it.
    assert sorted(kept) == sorted(chosen)
    for name in kept:
        command = next(c for c in RUN_COMMANDS if c in flag(name).commands)
        base = RunOptions(elo0=0.0, elo1=5.0) if command == "sprt" else RunOptions()
        changed = replace(base, **{name: chosen[name]})
        words, changed_words = ["random", "greedy"], ["random", "greedy"]
        if name == "openings":  # the file's openings instead of random ones
            base, changed = replace(base, random_openings=3), replace(changed, random_openings=None)
        if name == "engines_file":  # the engines named in the file instead of on the command line
            changed_words = []
        before = build_spec(KIND[command], words, base)
        after = build_spec(KIND[command], changed_words, changed)
        assert after != before, f"--{name.replace('_', '-')} does not reach the run's spec"
        assert RunSpec.from_dict(after.to_dict()) == after, name


def test_each_command_takes_its_options_as_declared() -> None:
    """The run commands, and ``ladder run``: each option they take is the table's, none other."""
    for command in (*RUN_COMMANDS, LADDER):
        text = cli(*(["ladder", "run"] if command == LADDER else [command]), "--help").stdout
        for name, how, _ in option_fields(command):
            assert how.flags[0].split("/")[0] in text, (command, name)
        for f in fields(RunOptions):
            if command not in flag(f.name).commands:
                assert flag(f.name).flags[0] + " " not in text, (command, f.name)
    assert dict((n, d) for n, _, d in option_fields("sprt"))["strict"] is True
    assert dict((n, d) for n, _, d in option_fields("play"))["strict"] is False


def test_resume_refuses_what_the_journal_keeps_and_takes_what_it_does_not(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = cli("play", "random", "greedy", "--games", "2", "--tc", "st=0.05", "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    values = {"games": "4", "tc": "st=2", "out": str(tmp_path / "x"), "force": None, "interleave": None}
    for name in ("games", "tc", "out", "force", "interleave"):
        how = flag(name)
        assert how.journal in (Journal.KEPT, Journal.CREATION)
        spelled = how.flags[0].split("/")[0]
        value = values[name]
        r = cli("play", "--resume", str(out), spelled, *([] if value is None else [value]))
        assert r.returncode == 2, (name, r.stderr)
        assert f"(got {spelled})" in r.stderr, r.stderr
    r = cli("play", "--resume", str(out), "--quiet", "--progress-every", "1")
    assert r.returncode == 0, r.stderr


def test_build_spec_refuses_an_sprt_without_its_bounds_and_both_opening_sources() -> None:
    with pytest.raises(RunError, match="sprt needs --elo0 and --elo1"):
        build_spec(RunKind.SPRT, ["random", "greedy"], RunOptions())
    with pytest.raises(RunError, match="--openings FILE or --random-openings K, not both"):
        build_spec(RunKind.MATCH, ["random", "greedy"], RunOptions(openings="x.txt", random_openings=2))
    with pytest.raises(RunError, match="--log-limit '12Q'"):
        build_spec(RunKind.MATCH, ["random", "greedy"], RunOptions(log_limit="12Q"))


def readme_table_flags() -> set[str]:
    """The flags named in the first column of the README's table of run options."""
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    table = readme.split("| option | meaning | default |\n|---|---|---|\n", 1)[1].split("\n\n", 1)[0]
    rows = table.splitlines()
    assert rows and all(row.startswith("| ") for row in rows)
    return {word for row in rows for word in re.findall(r"`(--?[a-z][a-z0-9-]*)", row.split(" | ")[0])}


def test_the_readme_table_names_every_run_option_and_no_other() -> None:
    declared = {
        spelling for f in fields(RunOptions) for name in f.metadata["flag"].flags for spelling in name.split("/")
    }
    assert readme_table_flags() == declared
