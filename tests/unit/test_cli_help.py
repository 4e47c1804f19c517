"""``nfvcat --help`` and every command's help are written for a terminal: no reStructuredText markup from the
docstrings the commands describe themselves with."""

from __future__ import annotations

import argparse
import subprocess
import sys

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
