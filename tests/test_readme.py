"""The documentation's command lines and job files run against a generated prediction log.

The README and the pages under ``docs/``: their Python blocks are tests of their own
(pytest-markdown-docs; see the root conftest.py, whose ``docs_workdir`` fixture writes the
data). Here: every ``streameval`` command of a ```bash block, with its ``[optional]`` parts
left out, exits with status 0; every ```toml block parses, and the job file loads and runs;
the README opens with the two commands that install and run the demo, and the tests.
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

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def doc_blocks(language: str) -> list[tuple[Path, int, str]]:
    """(file, line, body) of the README's and the docs pages' fenced blocks of one language."""
    pattern = re.compile(rf"^```{language}[^\S\n]*([^\n]*)\n(.*?)^```$", re.M | re.S)
    found = []
    for path in [README, *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        found += [
            (path, text.count("\n", 0, m.start()) + 1, m.group(2))
            for m in pattern.finditer(text)
            if "notest" not in m.group(1)
        ]
    return found


def where(path: Path, line: int) -> str:
    """``docs/jobs.md:12``: a block's file and line, for test ids and messages."""
    return f"{path.relative_to(ROOT)}:{line}"


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


SHELL = [(where(path, line), list(commands(body))) for path, line, body in doc_blocks("bash")]
SHELL = [(place, cmds) for place, cmds in SHELL if cmds]
TOML = [(where(path, line), body) for path, line, body in doc_blocks("toml")]


def test_the_docs_have_commands_and_a_job_file():
    assert len(SHELL) >= 2 and any(cmd[0] == "run" for _, cmds in SHELL for cmd in cmds)
    assert any("[source]" in body for _, body in TOML)
    readme = [place for place, _ in SHELL if place.startswith("README.md:")]
    assert len(readme) >= 2, "the README shows the demo and a tour of the command line"


def test_the_readme_opens_with_the_install_demo_and_test_commands():
    text = README.read_text(encoding="utf-8")
    first = re.search(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)
    assert first and first.group(1) == "bash"
    assert text.index(first.group(0)) < text.index("\n## "), "the commands come first"
    lines = [re.sub(r"\s+#.*$", "", line) for line in first.group(2).splitlines()]
    assert lines == [
        "python -m pip install -e . && streameval demo",
        "python -m pip install -e '.[dev,spark]' && python -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pip install -e '.[dev,spark]' && python -m pytest" in ci


@pytest.mark.parametrize(("place", "cmds"), SHELL, ids=[place for place, _ in SHELL])
def test_bash_block_commands_run(docs_workdir, capsys, place, cmds):
    for args in cmds:
        if "more.parquet" in args and not Path("more.parquet").exists():
            # "another state file": one of the store's partition states
            shutil.copy(sorted(Path("state").rglob("states/*.parquet"))[0], "more.parquet")
        status = main(args)
        err = capsys.readouterr().err
        assert status == 0, f"{place}: streameval {shlex.join(args)}\n{err}"


@pytest.mark.parametrize(("place", "body"), TOML, ids=[place for place, _ in TOML])
def test_toml_blocks_parse_and_job_files_run(docs_workdir, place, body):
    parsed = tomllib.loads(body)
    if "source" not in parsed:
        return
    Path("job.toml").write_text(body, encoding="utf-8")
    job = load_job("job.toml")
    assert job.outputs, f"{place}: a job file without outputs"
    report = run_job("job.toml", quiet=True)
    assert report.processed > 0
    weekly = (docs_workdir / "weekly.csv").read_text().splitlines()[0].split(",")
    assert weekly[:4] == ["segment", "window", "day", "days"]
