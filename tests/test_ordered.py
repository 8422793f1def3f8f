"""The same rows give the same bits: every float sum adds its terms in a fixed order.

Polars' streaming engine, a ``group_by`` without ``maintain_order``, a partitioned
``group_by`` and the optimizer's dropping of ``maintain_order`` before a sort all change the
order in which a group's float terms are added, from run to run (:mod:`streameval.ordered`).
These tests read the package's source for the rules that prevent it, and run the same
evaluations several times over data large enough for each of those to show.
"""

from __future__ import annotations

import ast
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import streameval as se
from streameval import pipeline

PACKAGE = Path(__file__).resolve().parents[1] / "streameval"

#: PySpark's API (``DataFrame.join``, ``.collect()``), not Polars'.
SPARK = ("spark/", "jobs/sparksource.py")

#: Group-bys over a user's rows that count them (no float sum), on the source's engine.
EXEMPT = {
    ("estimators.py", "_oob_table"): "the out-of-bag rows per id",
    ("split/units.py", "add_group_share"): "the rows per unit",
}

#: The kinds of frame join (a string's ``join`` takes none of these keywords).
JOIN_KEYWORDS = {"on", "left_on", "right_on", "how"}


def _calls() -> list[tuple[str, str, ast.Call]]:
    """Every call in the package (outside Spark's modules): file, enclosing function, call."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith(SPARK):
            continue
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef):
                for node in ast.walk(function):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                        found.append((name, function.name, node))
    return found


def _broken(name: str, function: str, call: ast.Call) -> str | None:
    """What ``call`` leaves to chance, or None."""
    assert isinstance(call.func, ast.Attribute)
    method = call.func.attr
    keywords = {k.arg: k.value for k in call.keywords}
    if method == "group_by" and "maintain_order" not in keywords:
        return "a group_by without maintain_order"
    if method == "join" and JOIN_KEYWORDS & set(keywords) and "maintain_order" not in keywords:
        return "a join without maintain_order"
    if method == "collect":
        engine = keywords.get("engine")
        if engine is None:
            return "a collect without its engine"
        if isinstance(engine, ast.Constant) and engine.value == "in-memory":
            flags = keywords.get("optimizations")
            if not (isinstance(flags, ast.Name) and flags.id == "ORDERED"):
                return "an in-memory collect without optimizations=ORDERED"
    return None


def test_every_query_states_its_order() -> None:
    broken = [
        f"{name}:{call.lineno} ({function}): {why}"
        for name, function, call in _calls()
        if (why := _broken(name, function, call)) and (name, function) not in EXEMPT
    ]
    assert not broken, (
        "float sums would depend on the run (see streameval/ordered.py); "
        "hint: maintain_order=True on group_by, maintain_order='left_right' on joins, "
        "collect(engine='in-memory', optimizations=ORDERED) over state tables:\n"
        + "\n".join(broken)
    )
    calls = {(name, function) for name, function, _ in _calls()}
    assert set(EXEMPT) <= calls, "an exemption names a function that is gone"


def test_the_rules_catch_what_they_name() -> None:
    def one(source: str) -> str | None:
        call = ast.parse(source).body[0].value  # type: ignore[attr-defined]
        return _broken("m.py", "f", call)

    assert one("lf.group_by('g')") is not None
    assert one("lf.join(other, on='g', how='left')") is not None
    assert one("lf.collect()") is not None
    assert one("lf.collect(engine='in-memory')") is not None
    assert one("', '.join(names)") is None
    assert one("lf.group_by('g', maintain_order=True)") is None
    assert one("lf.join(o, on='g', maintain_order='left_right')") is None
    assert one("lf.collect(engine='in-memory', optimizations=ORDERED)") is None
    assert one("lf.collect(engine='streaming')") is None


def _bytes(frame: pl.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.write_ipc(out)
    return out.getvalue()


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    """200,000 weighted rows over 1,500 segments: four classes, two models, a target."""
    rng = np.random.default_rng(7)
    n, k = 200_000, 4
    y = (rng.random(n) < 0.3).astype(np.int8)
    p = np.clip(rng.random(n) * 0.5 + y * 0.3, 0.0, 1.0)
    probs = rng.dirichlet(np.ones(k), n)
    target = rng.gamma(2.0, 3.0, n)
    return pl.DataFrame(
        {
            "g": rng.integers(0, 1_500, n).astype(np.int32),
            "y": y,
            "p": p,
            "p2": np.clip(p + rng.normal(0, 0.1, n), 0.0, 1.0),
            "w": rng.exponential(1.0, n),
            "c": rng.integers(0, k, n),
            **{f"p{i}": probs[:, i] for i in range(k)},
            "t": target,
            "pred": target + rng.normal(0.0, 1.0, n),
        }
    )


def _same_every_time(make: Callable[[], pl.DataFrame], times: int = 4) -> None:
    first = _bytes(make())
    for _ in range(times - 1):
        assert _bytes(make()) == first


def test_a_state_gives_the_same_bits_every_time(rows: pl.DataFrame) -> None:
    scores = [f"p{i}" for i in range(4)]
    binary = se.accumulate(rows, label="y", score="p", by="g", weight="w")
    classes = se.accumulate(rows, label="c", task="multiclass", scores=scores, by="g", weight="w")
    regression = se.accumulate(
        rows, label="t", prediction="pred", task="regression", by="g", weight="w"
    )
    _same_every_time(lambda: binary.metrics(ci="wilson"))
    _same_every_time(lambda: se.merge([binary, binary]).metrics())
    _same_every_time(lambda: classes.metrics())
    _same_every_time(lambda: classes.per_class())
    _same_every_time(lambda: se.merge([classes, classes]).metrics())
    _same_every_time(lambda: se.merge([regression, regression]).metrics())


@pytest.mark.parametrize("kernel", ["all", "off"])
def test_a_streaming_source_gives_the_same_state_every_time(
    rows: pl.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    path = tmp_path / "rows.parquet"
    rows.write_parquet(path, row_group_size=20_000)
    monkeypatch.setenv("STREAMEVAL_KERNEL", kernel)
    monkeypatch.setattr(pipeline, "BATCH_ROWS", 50_000)
    paired = {"label": "y", "task": "paired", "scores": ["p", "p2"], "by": "g"}
    _same_every_time(lambda: se.accumulate(path, weight="w", **paired).table, 3)
    _same_every_time(lambda: se.accumulate(path, **paired).table, 3)  # (counts: streamed)
    _same_every_time(
        lambda: se.accumulate(path, label="y", score="p", by="g", bootstrap=3).table, 3
    )
    if kernel == "off":
        _same_every_time(
            lambda: se.accumulate(path, label="y", score="p", by="g", weight="w").table, 3
        )
