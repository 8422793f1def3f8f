"""``--help`` of every command: plain text, a one-line description, examples that parse."""

from __future__ import annotations

import re
import shlex

import pytest

from streameval.cli import _build, main
from streameval.cli_help import EXAMPLES

COMMANDS = [[], ["evaluate"], ["report"], ["demo"], ["run"], ["state"], ["state", "inspect"],
            ["state", "merge"], ["state", "metrics"]]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "streameval")
def test_help_is_plain_text_with_examples(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and ":func:" not in out  # no reStructuredText in a terminal
    assert "examples:\n" in out
    shown = re.findall(r"^    \$ (streameval .*)$", out, re.M)
    name = command[-1] if command else "streameval"
    assert shown == [line for _, line in EXAMPLES[name]]
    prose = [line for line in out.splitlines() if not line.startswith("    $ ")]
    assert all(len(line) <= 80 for line in prose), out


def test_each_subcommand_is_listed_with_a_one_line_description(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    for command in ([], ["state"]):
        main([*command, "--help"])
        out = capsys.readouterr().out
        section = out.split("positional arguments:")[1].split("\n\n")[0]
        listed = re.findall(r"^    (\w+)\s{2,}(\S.*)$", section, re.M)
        top = ["evaluate", "report", "demo", "slices", "run", "state"]
        wanted = ["inspect", "merge", "metrics"] if command else top
        assert [name for name, _ in listed] == wanted
        assert all(len(text) > 20 for _, text in listed)


@pytest.mark.parametrize("example", [line for lines in EXAMPLES.values() for _, line in lines])
def test_every_example_parses(example):
    args = _build().parse_args(shlex.split(example)[1:])
    assert args.command in ("evaluate", "report", "demo", "slices", "run", "state")
