"""Command line: ``streameval evaluate`` and ``streameval demo``.

Bad input prints one line on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from .errors import StreamevalError
from .spec import parse_precision

SUMMARY = {
    "binary": [
        "n", "positives", "prevalence", "roc_auc", "roc_auc_error", "average_precision",
        "log_loss", "precision", "recall", "f1", "accuracy", "threshold",
    ],
    "multiclass": [
        "n", "accuracy", "balanced_accuracy", "f1_macro", "f1_weighted", "cohen_kappa", "mcc",
        "log_loss", "top_k_accuracy", "roc_auc_ovr_macro", "roc_auc_ovr_macro_error",
    ],
    "regression": ["n", "mean_error", "rmse", "mae", "median_ae", "mape", "smape", "r2"],
    "paired": ["model", "n", "positives", "roc_auc", "roc_auc_error", "average_precision"],
}  # fmt: skip


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        hint = "" if "hint:" in message else f"; hint: see '{self.prog} --help'"
        self.exit(2, f"streameval: error: {message}{hint}\n")


def _precision(text: str) -> int:
    try:
        return parse_precision(text)
    except StreamevalError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    """The source, task and column options shared by ``evaluate`` and ``report``."""
    parser.add_argument("source", nargs="+", help="Parquet files, directories or globs")
    parser.add_argument(
        "--task", default="binary", choices=["binary", "multiclass", "regression", "paired"]
    )
    parser.add_argument("--label", required=True, help="label column")
    parser.add_argument("--score", help="binary: score column (any numeric range)")
    parser.add_argument("--prediction", help="multiclass: predicted class; regression: prediction")
    parser.add_argument(
        "--scores",
        action="append",
        help="multiclass: score column(s) in class order, or CLASS=COLUMN; paired: each "
        "model's score column (repeatable, or comma-separated)",
    )
    parser.add_argument("--classes", action="append", help="multiclass: every class, in order")
    parser.add_argument("--by", action="append", default=[], help="group key column (repeatable)")
    parser.add_argument("--weight", help="sample weight column")
    parser.add_argument("--positive", help="binary: the positive label value (default 1 / true)")
    parser.add_argument("--top-k", type=int, default=2, help="multiclass: k of top_k_accuracy")
    parser.add_argument("--power", type=float, default=1.5, help="regression: Tweedie power")
    parser.add_argument(
        "--precision", type=_precision, help="'exact' or mantissa bits (default 11)"
    )
    parser.add_argument(
        "--drop-nulls", action="store_true", help="drop rows with nulls, with a count"
    )


def _build() -> argparse.ArgumentParser:
    parser = _Parser(prog="streameval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ev = sub.add_parser("evaluate", help="evaluate predictions stored as Parquet")
    _add_inputs(ev)
    ev.add_argument("--folds", help="fold column: per-fold rows plus mean, sd and pooled rows")
    ev.add_argument("--repeats", help="repeat column of repeated cross-validation (with --folds)")
    ev.add_argument("--threshold", action="append", type=float, help="binary: threshold")
    ev.add_argument("--alpha", type=float, default=0.5, help="regression: pinball quantile")
    ev.add_argument("--metric", action="append", help="only these metrics (repeatable)")
    ev.add_argument(
        "--table",
        choices=["metrics", "per-class", "confusion", "tests"],
        default="metrics",
        help="multiclass: the per-class table or the confusion matrix instead of the metrics; "
        "paired: DeLong's tests of each pair of models",
    )
    ev.add_argument(
        "--ci",
        choices=["wilson", "clopper-pearson", "bootstrap", "jackknife"],
        help="add <metric>_lo/_hi intervals: proportions (with the AUC's by DeLong and "
        "caret's statistics), or every metric by bootstrap or jackknife",
    )
    ev.add_argument("--replicates", type=int, default=200, help="bootstrap replicates (200)")
    ev.add_argument("--row-id", action="append", help="bootstrap: row id column(s)")
    ev.add_argument("--seed", type=int, default=0, help="bootstrap: seed of the draws")
    ev.add_argument("--jackknife-by", help="jackknife: the key whose values are left out")
    ev.add_argument("--level", type=float, default=0.95, help="confidence level (0.95)")
    ev.add_argument(
        "--auc-method", choices=["delong", "hanley-mcneil"], default="delong", help="AUC variance"
    )
    ev.add_argument(
        "--summary",
        action="store_true",
        help="binary, multiclass: print caret's confusion matrix and statistics per group",
    )
    ev.add_argument("--output", help="write the table to FILE.parquet, .csv or .json")
    ev.add_argument("--all", action="store_true", help="print every column, not a summary")

    rep = sub.add_parser("report", help="write a self-contained HTML report")
    _add_inputs(rep)
    rep.add_argument("--output", required=True, help="the HTML file to write")
    rep.add_argument("--title", default="streameval report", help="the report's title")
    rep.add_argument("--level", type=float, default=0.95, help="confidence level (0.95)")

    demo = sub.add_parser("demo", help="generate a small prediction log and evaluate it")
    demo.add_argument("--rows", type=int, default=200_000)
    demo.add_argument("--dir", help="where to write the log (default: a temporary directory)")
    demo.add_argument("--output", help="write the table to FILE.parquet, .csv or .json")
    demo.add_argument("--all", action="store_true", help="print every column, not a summary")

    from .jobs.commands import register

    register(sub)  # run, state inspect|merge|metrics
    return parser


@contextmanager
def output_errors(output: str) -> Iterator[None]:
    """Report a failure to write ``--output`` as an error naming that path."""
    try:
        yield
    except OSError as exc:
        raise StreamevalError(
            f"expected to write --output {output!r}, but that failed ({exc}); hint: check that "
            "its folder exists or can be created, is writable, and that the path is no folder"
        ) from None


def _write(table: pl.DataFrame, output: str) -> None:
    path = Path(output)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv", ".json"):
        raise StreamevalError(
            f"expected --output to end in .parquet, .csv or .json, got {output!r}; "
            "hint: pick one of those formats"
        )
    with output_errors(output):
        path.parent.mkdir(parents=True, exist_ok=True)
        if suffix == ".parquet":
            table.write_parquet(path)
        elif suffix == ".csv":
            table.write_csv(path)
        else:
            table.write_json(path)
    print(f"wrote {table.height} rows to {path}", file=sys.stderr)


def _show(table: pl.DataFrame, columns: Sequence[str], show_all: bool) -> None:
    shown = table if show_all else table.select([c for c in columns if c in table.columns])
    shown = shown.with_columns(  # a bound of 3e-05 must not print as 0.0000
        pl.col(c).map_elements(lambda v: f"{v:.1e}", return_dtype=pl.String)
        for c in shown.columns
        if c.endswith("_error") and c != "mean_error"
    )
    with pl.Config(
        tbl_rows=200, tbl_cols=-1, tbl_width_chars=250, float_precision=4,
        tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True,
    ):  # fmt: skip
        print(shown)
    if shown.width < table.width:
        print(f"({table.width - shown.width} more columns: --all prints them, --output saves them)")


def _with_interval(name: str) -> list[str]:
    return [name, f"{name}_lo", f"{name}_hi"]


def _split(items: Sequence[str] | None) -> list[str]:
    return [part.strip() for item in items or [] for part in item.split(",") if part.strip()]


def _scores(items: Sequence[str] | None) -> list[str] | dict[str, str] | None:
    parts = _split(items)
    if not parts:
        return None
    if any("=" in p for p in parts):
        if not all(p.count("=") == 1 for p in parts):
            raise StreamevalError(
                f"expected every --scores item as CLASS=COLUMN once one is, got {parts!r}"
            )
        return dict(p.split("=") for p in parts)
    return parts


def _columns(args: argparse.Namespace) -> dict[str, object]:
    """The source's task and columns as ``accumulate`` keywords."""
    return {
        "label": args.label,
        "score": args.score,
        "by": args.by,
        "weight": args.weight,
        "task": args.task,
        "prediction": args.prediction,
        "scores": _scores(args.scores),
        "classes": _split(args.classes) or None,
        "positive": args.positive,
        "precision": args.precision,
        "top_k": args.top_k,
        "power": args.power,
        "drop_nulls": args.drop_nulls,
    }


def _report(args: argparse.Namespace) -> int:
    from . import accumulate
    from .report import write_report

    source = args.source if len(args.source) > 1 else args.source[0]
    state = accumulate(source, **_columns(args))  # type: ignore[arg-type]
    with output_errors(args.output):
        write_report(state, args.output, title=args.title, level=args.level)
    print(f"wrote a report of {len(state):,} state rows to {args.output}", file=sys.stderr)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from . import accumulate, evaluate

    thresholds = args.threshold or [0.5]
    source = args.source if len(args.source) > 1 else args.source[0]
    columns = _columns(args)
    intervals = {"ci": args.ci, "level": args.level, "auc_method": args.auc_method}
    resampling = {"bootstrap": args.replicates, "row_id": args.row_id, "seed": args.seed,
                  "jackknife": args.jackknife_by}  # fmt: skip
    if args.summary:
        if args.task not in ("binary", "multiclass"):
            raise StreamevalError(
                f"expected --task binary or multiclass with --summary, got --task {args.task}"
            )
        state = accumulate(source, **columns, thresholds=thresholds)  # type: ignore[arg-type]
        print(state.summary(thresholds[0], level=args.level), end="")
        return 0
    if args.table != "metrics":
        wanted = "paired" if args.table == "tests" else "multiclass"
        if args.task != wanted:
            raise StreamevalError(
                f"expected --task {wanted} with --table {args.table}, got --task {args.task}"
            )
        state = accumulate(source, **columns)  # type: ignore[arg-type]
        if args.table == "tests":
            table = state.roc_test(level=args.level)
        elif args.table == "per-class":
            table = state.per_class(**intervals)
        else:
            table = state.confusion_matrix()
        shown: list[str] = list(table.columns)
    else:
        table = evaluate(
            source,
            threshold=thresholds if len(thresholds) > 1 else thresholds[0],
            alpha=args.alpha,
            metrics=args.metric,
            folds=args.folds,
            repeats=args.repeats,
            **intervals,
            **(resampling if args.ci in ("bootstrap", "jackknife") else {}),
            **columns,  # type: ignore[arg-type]
        )
        names = SUMMARY[args.task] if not args.metric else table.columns
        cells = [c for c in (args.repeats, args.folds) if c] + (["estimate"] if args.folds else [])
        shown = [*args.by, *cells, *(c for name in names for c in _with_interval(name))]
    if args.output:
        _write(table, args.output)
    else:
        _show(table, shown, args.all)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from . import evaluate
    from .demo import generate_predictions

    folder = args.dir or tempfile.mkdtemp(prefix="streameval-demo-")
    generate_predictions(folder, rows=args.rows)
    print(f"wrote a synthetic prediction log of {args.rows:,} rows to {folder}", file=sys.stderr)
    print(
        f"$ streameval evaluate {folder} --label label --score score --by segment --by day",
        file=sys.stderr,
    )
    table = evaluate(folder, label="label", score="score", by=["segment", "day"])
    if args.output:
        _write(table, args.output)
    else:
        _show(table, ["segment", "day", *SUMMARY["binary"]], args.all)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = _build().parse_args(argv)
    except SystemExit as exc:  # a usage error (one line, status 2) or --help (status 0)
        return exc.code if isinstance(exc.code, int) else 0
    try:
        if hasattr(args, "handler"):  # subcommands registered by other modules
            return int(args.handler(args))
        commands = {"evaluate": _evaluate, "report": _report, "demo": _demo}
        return commands[args.command](args)
    except StreamevalError as exc:
        print(f"streameval: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(
            f"streameval: error: {one_line(first)}; hint: check the source files", file=sys.stderr
        )
        return 2


def one_line(text: str) -> str:
    r"""An error message as one printable line: control characters shown escaped.

    >>> one_line("cannot read 'a.parquet': bad \x0e\n byte")
    "cannot read 'a.parquet': bad \\x0e\\n byte"
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


if __name__ == "__main__":
    sys.exit(main())
