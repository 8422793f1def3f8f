"""Under CI=true a skipped test fails (the root conftest's hook), elsewhere it skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_skip_fails_in_ci(tmp_path, ci):
    test = tmp_path / "test_needs.py"
    test.write_text(
        "import pytest\n\n"
        "def test_needs_a_component():\n"
        "    pytest.importorskip('a_component_that_is_not_installed')\n\n"
        "def shown():\n"
        '    """\n'
        "    >>> shown()  # doctest: +SKIP\n"
        '    """\n\n'
        "@pytest.mark.xfail(reason='known')\n"
        "def test_expected_failure():\n"
        "    raise AssertionError\n"
    )
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
         "-o", "addopts=--doctest-modules", str(test)],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    summary = run.stdout.strip().splitlines()[-1]
    if ci:
        assert run.returncode == 1 and "1 failed" in summary and "1 skipped" in summary, run.stdout
        assert "1 xfailed" in summary  # the doctest shown, not run, stays skipped
        assert "CI=true, but this test skipped" in run.stdout
    else:
        assert run.returncode == 0 and "2 skipped" in summary and "1 xfailed" in summary
