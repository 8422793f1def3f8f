"""The documentation site builds without a warning, and its API reference covers the API.

``mkdocs build --strict`` fails on any warning: a broken link or anchor between pages, a
docstring that griffe cannot parse, a ``:::`` line naming nothing. The built pages must
render every public name: everything in ``streameval.__all__``, every public method of
``State``, and the public functions of the documented submodules, so a new public name
without a ``:::`` line in ``docs/reference/`` fails here. The README's links must lead to
files, and its performance rows must be the matrix's.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import streameval as se

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
# Submodules whose public functions the reference documents (``__all__``, else listed here).
SUBMODULES = {
    "split": None,
    "jobs": None,
    "spark": None,
    "plot": ["plot_curve", "plot_confusion"],
    "report": ["write_report", "build_report"],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``mkdocs build --strict`` writes it; the build fails on any warning."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    log = build.stdout + build.stderr
    assert build.returncode == 0, log
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, "\n".join(warnings)
    return out


def anchors(site: Path) -> set[str]:
    """The ids of every rendered API object in the reference pages."""
    found: set[str] = set()
    for page in (site / "reference").rglob("*.html"):
        found |= set(re.findall(r'id="(streameval\.[\w.]+)"', page.read_text(encoding="utf-8")))
    return found


def public_names() -> list[str]:
    """Every public name the reference must render, by its public path."""
    names = [f"streameval.{name}" for name in se.__all__]
    names += [
        f"streameval.State.{name}"
        for name, _ in inspect.getmembers(se.State)
        if not name.startswith("_")
    ]
    for module, listed in SUBMODULES.items():
        members = listed or __import__(f"streameval.{module}", fromlist=["__all__"]).__all__
        names += [f"streameval.{module}.{name}" for name in members]
    return names


def test_mkdocs_build_strict_has_no_warning(site):
    assert (site / "index.html").exists()
    assert (site / "reference" / "index.html").exists()


def test_every_public_name_has_a_reference_entry():
    text = "\n".join(p.read_text(encoding="utf-8") for p in REFERENCE.rglob("*.md"))
    entries = set(re.findall(r"^::: ([\w.]+)", text, re.M))
    missing = [name for name in se.__all__ if f"streameval.{name}" not in entries]
    assert not missing, f"no '::: streameval.NAME' line in docs/reference/ for {missing}"
    for module in SUBMODULES:
        assert f"streameval.{module}" in entries, module


def test_the_reference_renders_every_public_name(site):
    rendered = anchors(site)
    missing = [name for name in public_names() if name not in rendered]
    assert not missing, f"not rendered in the API reference: {missing}"


def first_line(obj: object) -> str:
    """A docstring's summary line as rendered: roles and backquotes reduced to their text."""
    line = (inspect.getdoc(obj) or "").splitlines()[0]
    return re.sub(r"(?::\w+:)?`+~?([^`]+?)`+", r"\1", line)


def test_the_reference_renders_the_docstrings(site):
    page = (site / "reference" / "index.html").read_text(encoding="utf-8")
    start, end = page.index('id="streameval.evaluate"'), page.index('id="streameval.accumulate"')
    section = html.unescape(re.sub(r"<[^>]+>", "", page[start:end]))
    assert first_line(se.evaluate) in section
    assert "Examples" in section and "se.evaluate(" in section
    state = (site / "reference" / "state" / "index.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", state))
    assert 'id="streameval.State.metrics"' in state
    assert first_line(se.State) in text and first_line(se.State.metrics) in text
    assert ":func:" not in page + state, "Sphinx roles are rendered as links or code"


def test_the_readme_links_lead_to_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), f"README link {link!r}: no such file"
        if anchor and target.suffix == ".md":
            slugs = {slug(h) for h in re.findall(r"^#+ (.+)$", target.read_text(), re.M)}
            assert anchor in slugs, f"README link {link!r}: no such heading"


def slug(heading: str) -> str:
    """The anchor of a Markdown heading, as MkDocs' and GitHub's slugs agree on it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def table_rows(text: str, header_start: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the first Markdown table whose header starts so."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return [cell.strip() for cell in lines[first].strip().strip("|").split("|")], rows


def test_the_readme_performance_rows_are_the_matrix_rows():
    header = "| data | configuration |"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    full = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    short_head, short_rows = table_rows(readme, header)
    full_head, full_rows = table_rows(full, header)
    assert len(short_rows) >= 3 and set(short_head) <= set(full_head)
    matrix = {(row[0], row[1]): dict(zip(full_head, row, strict=True)) for row in full_rows}
    for row in short_rows:
        cells = dict(zip(short_head, row, strict=True))
        assert (row[0], row[1]) in matrix, f"README row {row[:2]} is not in the matrix"
        assert cells == {k: matrix[row[0], row[1]][k] for k in short_head}, row[:2]
