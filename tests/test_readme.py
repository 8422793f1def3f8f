"""The README's command lines and job files run against a generated prediction log.

Its Python blocks are tests of their own (pytest-markdown-docs; see the root conftest.py,
whose ``readme_workdir`` fixture writes the data). Here: every ``streameval`` command of a
```bash block, with its ``[optional]`` parts left out, exits with status 0; every ```toml
block parses, and the job file loads and runs.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from streameval.cli import main
from streameval.jobs import load_job, run_job

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(language: str) -> list[tuple[int, str]]:
    """(line, body) of the README's fenced blocks of one language."""
    text = README.read_text(encoding="utf-8")
    pattern = re.compile(rf"^```{language}[^\S\n]*([^\n]*)\n(.*?)^```$", re.M | re.S)
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(2))
        for m in pattern.finditer(text)
        if "notest" not in m.group(1)
    ]


def commands(block: str) -> Iterator[list[str]]:
    """The ``streameval`` commands of a shell block, arguments only, optional parts dropped."""
    text = re.sub(r"\\\n\s*", " ", block)  # continued lines
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)  # comments
        line = re.sub(r"\s*\[[^\]]*\]", "", line)  # [--optional arguments]
        for part in line.split("&&"):
            words = shlex.split(part)
            if words[:1] == ["streameval"]:
                yield words[1:]


SHELL = [(line, list(commands(body))) for line, body in blocks("bash")]
SHELL = [(line, cmds) for line, cmds in SHELL if cmds]


def test_the_readme_has_commands_and_a_job_file():
    assert len(SHELL) >= 2 and any(cmd[0] == "run" for _, cmds in SHELL for cmd in cmds)
    assert any("[source]" in body for _, body in blocks("toml"))


@pytest.mark.parametrize(("line", "cmds"), SHELL, ids=[f"line-{line}" for line, _ in SHELL])
def test_bash_block_commands_run(readme_workdir, capsys, line, cmds):
    for args in cmds:
        if "more.parquet" in args and not Path("more.parquet").exists():
            # "another state file": one of the store's partition states
            shutil.copy(sorted(Path("state").rglob("states/*.parquet"))[0], "more.parquet")
        status = main(args)
        err = capsys.readouterr().err
        assert status == 0, f"README line {line}: streameval {shlex.join(args)}\n{err}"


@pytest.mark.parametrize(("line", "body"), blocks("toml"), ids=lambda v: str(v)[:12])
def test_toml_blocks_parse_and_job_files_run(readme_workdir, line, body):
    parsed = tomllib.loads(body)
    if "source" not in parsed:
        return
    Path("job.toml").write_text(body, encoding="utf-8")
    job = load_job("job.toml")
    assert job.outputs, f"README line {line}: a job file without outputs"
    report = run_job("job.toml", quiet=True)
    assert report.processed > 0
    weekly = (readme_workdir / "weekly.csv").read_text().splitlines()[0].split(",")
    assert weekly[:4] == ["segment", "window", "day", "days"]
