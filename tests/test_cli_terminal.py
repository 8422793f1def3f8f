"""Every subcommand under a real terminal of 80 and 120 columns, and into a closed pipe.

Nothing wraps (no line longer than the terminal), nothing is cut silently, nothing ends in a
traceback or a non-zero exit status.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import polars as pl
import pytest

ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def in_terminal(argv: list[str], width: int, cwd: Path) -> tuple[int, str]:
    """Run ``python -m streameval argv`` with a pseudo-terminal of ``width`` columns as its
    stdout and stderr; return (status, output with the terminal's CRLF made LF)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", *argv],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=ENV, cwd=cwd,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError as exc:  # EIO: the terminal's last writer is gone
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    status = proc.wait(timeout=120)
    return status, b"".join(chunks).decode().replace("\r\n", "\n")


ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen_lines(out: str) -> list[str]:
    """The lines a terminal showed: escape sequences dropped, each redrawn line on its own."""
    return [part for line in ESCAPE.sub("", out).split("\n") for part in line.split("\r")]


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Path:
    """A prediction log with many groups, a job that has run, and a state file."""
    root = tmp_path_factory.mktemp("terminal")
    rng = np.random.default_rng(5)
    for day in (1, 2):
        n = 4_000
        y = rng.integers(0, 2, n)
        folder = root / "preds" / f"day=2026-10-0{day}"
        folder.mkdir(parents=True)
        pl.DataFrame(
            {
                "y": y,
                "p": np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 4),
                "seg": rng.choice([f"segment_{i:04d}" for i in range(400)], n),
                "kind": rng.choice(["a", "b"], n),
                "id": np.arange(n) + day * n,
            }
        ).write_parquet(folder / "part-0.parquet")
    (root / "job.toml").write_text(
        f'[source]\npaths = ["{root / "preds"}"]\npartition_key = "day"\n\n'
        '[task]\nlabel = "y"\nscore = "p"\nby = ["kind"]\n\n[store]\npath = "store"\n\n'
        '[[outputs]]\npath = "out/metrics"\nwindows = ["1d", "all"]\n'
    )
    subprocess.run([sys.executable, "-m", "streameval", "run", "job.toml", "--quiet"],
                   cwd=root, check=True, env=ENV)  # fmt: skip
    import streameval as se

    se.accumulate(root / "preds", label="y", score="p", by=["kind"]).write(root / "s.parquet")
    return root


EVAL = ["evaluate", "preds", "--label", "y", "--score", "p"]
COMMANDS = {
    "evaluate": [*EVAL, "--by", "kind", "--by", "day"],
    "evaluate-many-groups": [*EVAL, "--by", "seg"],
    "evaluate-bootstrap": [*EVAL, "--by", "kind", "--ci", "bootstrap", "--replicates", "20",
                           "--row-id", "id"],
    "evaluate-all": [*EVAL, "--by", "kind", "--all"],
    "evaluate-summary": [*EVAL, "--by", "kind", "--summary"],
    "evaluate-output": [*EVAL, "--output", "out/m.csv"],
    "report": [*EVAL[1:], "--by", "kind", "--output", "out/report.html"],
    "demo": ["demo", "--rows", "20000"],
    "run": ["run", "job.toml"],
    "run-dry": ["run", "job.toml", "--dry-run", "--full-refresh"],
    "state-inspect": ["state", "inspect", "store", "--files"],
    "state-inspect-file": ["state", "inspect", "s.parquet"],
    "state-merge": ["state", "merge", "store", "s.parquet", "--output", "out/merged.parquet"],
    "state-metrics": ["state", "metrics", "store"],
    "state-metrics-windows": ["state", "metrics", "store", "--by-window", "1d", "--by-window",
                              "all"],
}  # fmt: skip
COMMANDS["report"].insert(0, "report")


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_fits_the_terminal(place, name, width):
    status, out = in_terminal(COMMANDS[name], width, place)
    assert status == 0, out
    assert "Traceback" not in out
    too_long = [line for line in screen_lines(out) if len(line) > width]
    assert not too_long, out
    assert out.strip()
    if name == "evaluate-many-groups":
        assert "more rows (--all, or --output FILE)" in out  # 400 groups: cut, and says so


@pytest.mark.parametrize(
    "argv",
    [
        [*EVAL, "--by", "seg", "--by", "day"],
        [*EVAL, "--by", "seg", "--all"],
        [*EVAL, "--by", "seg", "--output", "-", "--format", "json"],
        ["state", "inspect", "store", "--files"],
        ["state", "metrics", "s.parquet"],
    ],
    ids=["evaluate", "evaluate-all", "output-json", "state-inspect", "state-metrics"],
)
def test_a_pipe_closed_after_one_line(place, argv):
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=place, env=ENV,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0, err
    assert first.strip()
    assert "Traceback" not in err and "Broken pipe" not in err and "error" not in err, err


def test_piped_output_is_long_enough_to_fill_the_pipe(place):
    result = subprocess.run(
        [sys.executable, "-m", "streameval", *EVAL, "--by", "seg", "--by", "day"],
        capture_output=True, cwd=place, env=ENV, check=True,
    )  # fmt: skip
    assert len(result.stdout) > 65536  # more than a pipe buffer: the test above means something


PROGRESS = {  # each long command, and what its progress bar counts
    "evaluate": ("2/2 partitions", "rows/s"),
    "evaluate-bootstrap": ("1/1 shards", "ETA"),  # not by day: the rows in shards
    "report": ("1/1 shards", "rows/s"),
    "demo": ("partitions", "rows/s"),
    "run-full": ("2/2 files", "rows/s"),
    "state-merge": ("2/2 inputs", "ETA"),
}
COMMANDS["run-full"] = ["run", "job.toml", "--full-refresh"]


@pytest.mark.parametrize("name", list(PROGRESS))
def test_progress_shows_on_a_terminal_and_not_when_piped(place, name):
    status, out = in_terminal(COMMANDS[name], 120, place)
    assert status == 0, out
    shown = ESCAPE.sub("", out)
    assert all(text in shown for text in PROGRESS[name]), out
    piped = subprocess.run(
        [sys.executable, "-m", "streameval", *COMMANDS[name]],
        capture_output=True, text=True, cwd=place, env=ENV,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stderr and "\r" not in piped.stderr and "━" not in piped.stderr
    if name == "run-full":  # a job's log: one plain line per partition stored
        assert piped.stderr.startswith("streameval run: day=2026-10-01: 1 file(s), 4,000 rows")
    else:
        assert not any(text in piped.stderr for text in PROGRESS[name]), piped.stderr


def test_progress_in_python_draws_a_bar_and_changes_nothing(place, capsys):
    import io

    import streameval as se
    from streameval import progress

    plain = se.evaluate(place / "preds", label="y", score="p", by=["kind", "day"])
    shown = se.evaluate(place / "preds", label="y", score="p", by=["kind", "day"], progress=True)
    assert shown.equals(plain)
    out = io.StringIO()
    bar = progress.Bar("evaluate", stream=out, terminal=True)
    progress._ACTIVE.set(bar)
    try:
        se.evaluate(place / "preds", label="y", score="p", by=["kind", "day"])
    finally:
        progress._ACTIVE.set(None)
        bar.close()
    assert "2/2 partitions 8,000 rows" in ESCAPE.sub("", out.getvalue())
