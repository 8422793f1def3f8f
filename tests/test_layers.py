"""The package's architecture, checked: layers (import-linter), no cycles, imports at the top.

The layers are declared once, in ``pyproject.toml`` (``[tool.importlinter]``); ``lint-imports``
checks that no module imports from a layer above its own. These tests run it, and add what
a layers contract does not say: no cycle anywhere (within a layer's package either), every
module placed in a layer, and the package's own modules imported at module level only (so
the import graph the contract reads is the whole graph).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "streameval"


def _layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = config["tool"]["importlinter"]["contracts"]
    return [[name.strip() for name in line.split("|")] for line in contract["layers"]]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("streameval", cache_dir=None)


def test_lint_imports_keeps_the_layers() -> None:
    command = shutil.which("lint-imports")
    assert command is not None, "import-linter is a dev dependency: pip install -e '.[dev]'"
    done = subprocess.run(
        [command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles(graph: grimp.ImportGraph) -> None:
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    made = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        made.add_module(name)
    made.add_import(importer="p.a", imported="p.b")
    made.add_import(importer="p.b", imported="p.a")
    made.add_import(importer="p.c", imported="p.a")
    assert _cycles(made) == [["p.a", "p.b"]]


def test_every_module_is_in_a_layer(graph: grimp.ImportGraph) -> None:
    placed = {f"streameval.{name}" for line in _layers() for name in line}
    # a package that imports nothing (its __init__ a docstring) holds its modules only
    holders = {m for m in graph.modules if not graph.find_modules_directly_imported_by(m)}
    unplaced = [
        m
        for m in sorted(graph.modules)
        if m != "streameval"
        and not any(m == p or m.startswith(p + ".") for p in placed)
        and not (m in holders and any(p.startswith(m + ".") for p in placed))
    ]
    assert unplaced == []
    assert sorted(placed - set(graph.modules)) == []  # (no layer names a module that is gone)


def _function_level_imports(path: Path) -> list[str]:
    """``line: import`` of the package's modules imported inside a function or class body."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # (annotations only)
            inner = nested or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
            )
            if (
                nested
                and isinstance(child, ast.ImportFrom)
                and (child.level or (child.module or "").startswith("streameval"))
            ):
                found.append(f"{child.lineno}: {ast.unparse(child)}")
            if nested and isinstance(child, ast.Import):
                names = [a.name for a in child.names if a.name.startswith("streameval")]
                found.extend(f"{child.lineno}: import {n}" for n in names)
            visit(child, inner)

    visit(tree, False)
    return found


def test_the_package_imports_itself_at_module_level_only() -> None:
    late = {
        str(path.relative_to(ROOT)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := _function_level_imports(path))
    }
    assert late == {}


def test_the_import_check_sees_a_late_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\n\ndef f():\n    from .state import State\n    import json\n")
    assert _function_level_imports(module) == ["4: from .state import State"]


def test_importing_the_package_loads_no_optional_dependency() -> None:
    code = (
        "import sys, streameval, streameval.cli, streameval.jobs, streameval.plot, "
        "streameval.report, streameval.spark\n"
        "print(sorted(m for m in ('pyspark', 'matplotlib', 'deltalake', 'pyiceberg') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


#: Where a task's name may be compared: the registry, and the spec (a data class below it,
#: which knows its own kinds' negative class).
NAMED = {"streameval/tasks/registry.py", "streameval/spec.py"}


def _task_name_branches(path: Path) -> list[str]:
    """Comparisons of a value with a task's name (or a tuple of names) in ``path``."""
    from streameval.tasks.registry import TASKS

    def names(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in TASKS
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(names(e) for e in node.elts)
        return False

    tree = ast.parse(path.read_text(), str(path))
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and any(names(e) for e in [node.left, *node.comparators])
    ]


def test_code_asks_the_task_registry_rather_than_comparing_task_names() -> None:
    branches = {
        relative: found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (relative := str(path.relative_to(ROOT))) not in NAMED
        if (found := _task_name_branches(path))
    }
    assert branches == {}, "ask tasks.registry.offers(task, capability) instead"


def test_the_branch_check_sees_a_task_name(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(kind, x):\n    return kind in ('binary', 'paired') or x == 'a'\n")
    assert _task_name_branches(module) == ["2: kind in ('binary', 'paired')"]


def test_each_task_offers_known_capabilities_and_a_misspelt_one_is_refused() -> None:
    from streameval.tasks.registry import CAPABILITIES, TASKS, offers

    for name, task in TASKS.items():
        assert set(task.CAPABILITIES) <= set(CAPABILITIES), name
    assert all(any(c in t.CAPABILITIES for t in TASKS.values()) for c in CAPABILITIES)
    with pytest.raises(ValueError, match="unknown capability 'curve'"):
        offers("binary", "curve")
