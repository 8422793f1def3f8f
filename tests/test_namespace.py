"""The package namespace is ``__all__`` plus the submodules the README documents."""

import importlib
import subprocess
import sys
import types

import streameval as se

# Submodules the README tells users to import or reach through the package.
DOCUMENTED = {"jobs", "kernels", "plot", "spark", "split"}


def test_dir_is_all_and_documented_submodules() -> None:
    public = [name for name in dir(se) if not name.startswith("_")]
    assert public == sorted(set(se.__all__) | DOCUMENTED)


def test_no_helper_names_leak() -> None:
    assert not hasattr(se, "annotations")
    leaked = {
        name
        for name, value in vars(se).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert leaked <= set(se.__all__), leaked - set(se.__all__)


def test_all_names_resolve_and_star_import_gives_all() -> None:
    for name in se.__all__:
        assert getattr(se, name) is not None
    scope: dict[str, object] = {}
    exec("from streameval import *", scope)
    assert {n for n in scope if not n.startswith("__")} == set(se.__all__)


def test_documented_submodules_resolve() -> None:
    for name in DOCUMENTED:
        module = getattr(se, name)
        assert module is importlib.import_module(f"streameval.{name}")


def test_import_stays_lazy() -> None:
    code = (
        "import sys, streameval as se; "
        "print(any(m in sys.modules for m in ('pyspark', 'matplotlib', 'streameval.jobs')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
