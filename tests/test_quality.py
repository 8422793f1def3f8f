"""Lint, format and type checks run with the tests, so CI enforces them."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Every Python file of the repository: the package, tests, benchmarks, the docs' extension.
PYTHON = ("streameval", "tests", "benchmarks", "examples", "conftest.py", "docs/public_names.py")


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_lint_and_format():
    lint = run("ruff", "check", *PYTHON)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = run("ruff", "format", "--check", *PYTHON)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_strict():
    pytest.importorskip("mypy")
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr
