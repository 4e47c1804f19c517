"""``nfvcat --help`` and every command's help are written for a terminal: no reStructuredText markup from the
docstrings the commands describe themselves with."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from nfvcat.cli import build_parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _parsers(sub)
    return found


def test_nfvcat_help_says_what_nfvcat_is_in_plain_text() -> None:
    proc = subprocess.run([sys.executable, "-m", "nfvcat", "--help"], capture_output=True, text=True, check=True)
    assert "``" not in proc.stdout
    assert "nfvcat validates, plans, packages and deploys" in proc.stdout
    assert "Exit codes:" in proc.stdout


def test_no_command_help_shows_restructuredtext() -> None:
    parsers = _parsers(build_parser())
    assert len(parsers) > 25  # every command and its actions
    marked = {p.prog: [line for line in p.format_help().splitlines() if "``" in line] for p in parsers}
    assert {prog: lines for prog, lines in marked.items() if lines} == {}


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))


GROUPS = ["author and validate", "plan", "package and release", "deploy and operate", "test campaigns",
          "the dev cloud"]


def _sections(text: str) -> dict[str, list[str]]:
    """The help's sections (a heading line ending in ':' with no indent) and the command names under each."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = out.setdefault(line[:-1], [])
        elif current is not None and line.startswith("  ") and not line.startswith("   ") and line.split():
            current.append(line.split()[0])
    return out


def test_nfvcat_help_groups_the_commands_the_way_a_user_works() -> None:
    proc = subprocess.run([sys.executable, "-m", "nfvcat", "--help"], capture_output=True, text=True, check=True)
    sections = _sections(proc.stdout)
    assert [s for s in sections if s in GROUPS] == GROUPS, proc.stdout
    listed = [c for g in GROUPS for c in sections[g]]
    commands = set(_commands(build_parser()))
    assert sorted(listed) == sorted(commands)  # every command once, none left in a flat list
    assert "positional arguments" not in sections
    assert sections["the dev cloud"] == ["devcloud"]  # the nfvcat-testbeds plugin, by its module's GROUP
    assert {"validate", "rules"} <= set(sections["author and validate"]) and "plan" in sections["plan"]
    assert "instantiate" in sections["deploy and operate"] and "package" in sections["package and release"]


def test_a_plugin_without_a_group_lands_in_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    from nfvcat.core import plugins

    def register(subparsers: argparse._SubParsersAction) -> None:
        subparsers.add_parser("h42-fake", help="a plugin's command").set_defaults(func=lambda a: 0)

    real_names, real_load = plugins.names, plugins.load
    monkeypatch.setattr(plugins, "names", lambda g: [*real_names(g), "h42-fake"])
    monkeypatch.setattr(plugins, "load", lambda g, n: register if n == "h42-fake" else real_load(g, n))
    sections = _sections(build_parser().format_help())
    assert sections["plugins"] == ["h42-fake"] and sections["the dev cloud"] == ["devcloud"]


def test_every_command_help_has_an_example_and_its_exit_codes() -> None:
    top = build_parser()
    commands = _commands(top)
    assert len(commands) >= 25
    for name, parser in commands.items():
        text = parser.format_help()
        assert "Examples:\n  nfvcat " in text, name
        assert "Exit codes: 0 " in text, name


def test_every_example_parses() -> None:
    """The examples are command lines nfvcat takes as they are written (a user pastes them)."""
    import shlex

    commands = _commands(build_parser())
    tried = 0
    for parser in commands.values():
        examples = parser.epilog.split("Examples:\n", 1)[1].split("\n\n", 1)[0]
        for line in examples.splitlines():
            for part in line.split("#", 1)[0].split("&&"):
                words = shlex.split(part)
                while ">" in words:
                    del words[words.index(">"):words.index(">") + 2]
                assert words[0] == "nfvcat", line
                build_parser(words[1]).parse_args(words[1:])  # SystemExit(1) on a usage error
                tried += 1
    assert tried >= 40


def test_columns_without_a_format_give_a_table() -> None:
    """As openstackclient: ``-c`` alone prints a table of those columns."""
    proc = subprocess.run([sys.executable, "-m", "nfvcat", "rules", "-c", "id", "-c", "severity"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("+--") and lines[1].split("|")[1:3] == [" id    ", " severity "], lines[:3]
    assert any("| E0001 |" in line for line in lines)
