"""The command line: ``evaluate``, ``report``, ``slices`` and ``demo`` (``run``, ``state``: jobs).

Bad input prints one line on stderr and exits with status 2; every argument is checked
before any data is read. On a terminal a table fits its width; piped, it is CSV.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Sequence

import polars as pl

from . import display
from .accumulate import accumulate
from .cli_checks import (
    add_output,
    check_evaluate,
    check_inputs,
    check_level,
    check_output_path,
    output_format,
)
from .cli_drift import add_options as add_drift_options
from .cli_drift import baseline as drift_baseline
from .cli_drift import drift_columns
from .cli_help import Formatter, add_command, examples
from .cli_output import emit, output_errors
from .cli_slices import register as register_slices
from .demo import generate_predictions
from .errors import StreamevalError
from .evaluate import evaluate
from .jobs.commands import register
from .metrics.registry import summary_columns
from .progress import at_terminal, showing
from .report import write_report
from .spec import parse_precision
from .tasks.registry import TASKS, offers
from .version import __version__

__all__ = ["check_output_path", "main", "one_line", "output_format"]
PIPED = (
    "On a terminal, a table fits its width (key columns, then the metrics that fit; the last "
    "lines say what was left out); piped or redirected, it is CSV: every row at full precision."
)


DESCRIPTION = (
    "Evaluate model predictions stored as data (Parquet files, hive day=… folders, globs): "
    "metric tables per segment and day, HTML reports, and scheduled jobs."
)


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
        "--task",
        default="binary",
        choices=list(TASKS),
        metavar="TASK",
        help=f"{', '.join(TASKS)} (default binary)",
    )
    parser.add_argument(
        "--label",
        action="append",
        required=True,
        help="label column (multilabel: one per label, repeatable or comma-separated, or one "
        "list column)",
    )
    parser.add_argument("--score", help="binary: score column (any numeric range)")
    parser.add_argument("--prediction", help="multiclass: predicted class; regression: prediction")
    parser.add_argument(
        "--scores",
        action="append",
        help="multiclass, multilabel: score column(s) in class order, or CLASS=COLUMN; paired: "
        "each model's score column (repeatable, or comma-separated)",
    )
    parser.add_argument(
        "--classes", action="append", help="multiclass, multilabel: every class, in order"
    )
    parser.add_argument("--by", action="append", default=[], help="group key column (repeatable)")
    parser.add_argument("--weight", help="sample weight column")
    parser.add_argument(
        "--positive", help="binary, paired: the positive label value (default 1 / true)"
    )
    parser.add_argument("--top-k", type=int, help="multiclass: k of top_k_accuracy (2)")
    parser.add_argument("--power", type=float, help="regression: Tweedie power (1.5)")
    parser.add_argument(
        "--query", action="append", help="ranking: query key column(s) (repeatable)"
    )
    parser.add_argument(
        "--k",
        action="append",
        type=_cutoff,
        help="ranking: cutoff of the metrics at k, or 'all' for the whole list (repeatable; 10)",
    )
    parser.add_argument(
        "--precision", type=_precision, help="'exact' or mantissa bits (default 11)"
    )
    parser.add_argument(
        "--drop-nulls", action="store_true", help="drop rows with nulls, with a count"
    )


def _build() -> argparse.ArgumentParser:

    parser = _Parser(
        prog="streameval",
        description=DESCRIPTION,
        epilog=examples("streameval", PIPED),
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"streameval {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="COMMAND"
    )

    ev = add_command(
        sub,
        "evaluate",
        "metric table of predictions stored as Parquet, per group",
        "Evaluate predictions stored as Parquet: one metric row per group (and "
        "threshold), with intervals on request.",
        PIPED,
    )
    _add_inputs(ev)
    ev.add_argument("--folds", help="fold column: per-fold rows plus mean, sd and pooled rows")
    ev.add_argument("--repeats", help="repeat column of repeated cross-validation (with --folds)")
    ev.add_argument(
        "--threshold", action="append", type=float, help="binary, multilabel: threshold"
    )
    ev.add_argument("--alpha", type=float, help="regression: pinball quantile (0.5)")
    ev.add_argument("--beta", type=float, help="binary, multiclass: beta of the fbeta columns (1)")
    ev.add_argument("--metric", action="append", help="only these metrics (repeatable)")
    ev.add_argument(
        "--table",
        choices=[
            "metrics",
            "per-class",
            "confusion",
            "tests",
            "report",
            "disparity",
            "fairness",
            "drift",
        ],
        default="metrics",
        metavar="TABLE",
        help="metrics (the default), per-class, confusion, tests, report, disparity, fairness "
        "or drift; "
        "multiclass (per-class: multilabel too): the per-class table or the confusion "
        "matrix instead of the metrics; paired: DeLong's tests of each pair of models; binary, "
        "multiclass, multilabel: print scikit-learn's classification report per group (report); "
        "binary: each --sensitive slice's selection rate, TPR and FPR against a reference "
        "(disparity), or fairlearn's summaries per stratum (fairness); binary, paired: each "
        "group's score drift (PSI, JS distance, KS) from the --against baseline (drift)",
    )
    ev.add_argument(
        "--sensitive", help="--table disparity, fairness: the --by key whose slices are compared"
    )
    ev.add_argument(
        "--reference",
        help="--table disparity: best (default), overall, or the slice compared with",
    )
    ev.add_argument(
        "--method",
        choices=["between_groups", "to_overall"],
        help="--table fairness: fairlearn's aggregation (between_groups)",
    )
    add_drift_options(ev)
    ev.add_argument(
        "--ci",
        choices=["wilson", "clopper-pearson", "bootstrap", "jackknife"],
        help="add <metric>_lo/_hi intervals: proportions (with the AUC's by DeLong and "
        "caret's statistics), or every metric by bootstrap or jackknife",
    )
    ev.add_argument("--replicates", type=int, help="bootstrap replicates (200)")
    ev.add_argument("--row-id", action="append", help="bootstrap: row id column(s)")
    ev.add_argument("--seed", type=int, help="bootstrap: seed of the draws (0)")
    ev.add_argument("--jackknife-by", help="jackknife: the key whose values are left out")
    ev.add_argument("--level", type=float, help="confidence level of --ci, --summary (0.95)")
    ev.add_argument(
        "--auc-method", choices=["delong", "hanley-mcneil"], help="--ci: AUC variance (delong)"
    )
    ev.add_argument(
        "--summary",
        action="store_true",
        help="binary, multiclass: print caret's confusion matrix and statistics per group",
    )
    add_output(ev)

    rep = add_command(
        sub,
        "report",
        "self-contained HTML report: metrics, trends over days, curves",
        "Write one HTML file (works offline): the metric table with intervals, "
        "a trend panel per metric over a date key with changed days flagged (DeLong), the "
        "groups ranked worst first, and the curves per group.",
    )
    _add_inputs(rep)
    rep.add_argument("--output", required=True, help="the HTML file to write")
    rep.add_argument("--title", default="streameval report", help="the report's title")
    rep.add_argument("--level", type=float, default=0.95, help="confidence level (0.95)")
    rep.add_argument(
        "--trend",
        help="the date key drawn over, a panel per metric (default: the first Date key)",
    )
    rep.add_argument(
        "--baseline",
        default="previous",
        help="each day's AUC is tested against this value of the --trend key (default: the "
        "day before)",
    )

    demo = add_command(
        sub,
        "demo",
        "generate a small prediction log and evaluate it",
        "Write a synthetic prediction log (hive day= folders) and evaluate it.",
        PIPED,
    )
    demo.add_argument("--rows", type=int, default=200_000)
    demo.add_argument("--dir", help="keep the log in this folder (default: a temporary one)")
    add_output(demo)

    register_slices(sub)
    register(sub)  # run, state inspect|merge|metrics
    return parser


# ---------------------------------------------------------------------------- commands


def _cutoff(text: str) -> int | None:
    """A ranking cutoff: a positive integer, or ``all`` (the whole list: None)."""
    if text.strip().lower() == "all":
        return None
    if text.strip().isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive integer or 'all', got {text!r}")


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


def _label(items: Sequence[str]) -> str | list[str]:
    """``--label``: one column, or (given more than once or comma-separated) a list of them."""
    columns = _split(items)
    return columns[0] if len(columns) == 1 else columns


def _columns(args: argparse.Namespace) -> dict[str, object]:
    """The source's task and columns as ``accumulate`` keywords."""
    return {
        "label": _label(args.label),
        "score": args.score,
        "by": args.by,
        "weight": args.weight,
        "task": args.task,
        "prediction": args.prediction,
        "scores": _scores(args.scores),
        "classes": _split(args.classes) or None,
        "positive": args.positive,
        "precision": args.precision,
        "top_k": 2 if args.top_k is None else args.top_k,
        "power": 1.5 if args.power is None else args.power,
        "query": _split(args.query) or None,
        "k": 10 if not args.k else args.k,
        "drop_nulls": args.drop_nulls,
    }


def _report(args: argparse.Namespace) -> int:
    check_inputs(args)
    check_level(args.level)
    check_output_path(args.output)
    source = args.source if len(args.source) > 1 else args.source[0]
    with showing("report", at_terminal()):
        state = accumulate(source, **_columns(args))  # type: ignore[arg-type]
        with output_errors(args.output):
            groups, rows = write_report(
                state,
                args.output,
                title=args.title,
                level=args.level,
                trend=args.trend,
                baseline=args.baseline,
            )
    s = "" if groups == 1 else "s"
    display.note(f"wrote a report of {groups:,} group{s} ({rows:,} rows) to {args.output}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    fmt = check_evaluate(args)
    thresholds = args.threshold or [0.5]
    level = 0.95 if args.level is None else args.level
    source = args.source if len(args.source) > 1 else args.source[0]
    columns = _columns(args)
    intervals = {"ci": args.ci, "level": level, "auc_method": args.auc_method or "delong"}
    if args.summary or args.table == "report":  # printouts: caret's, or scikit-learn's report
        with showing("evaluate", at_terminal()):
            state = accumulate(source, **columns, thresholds=thresholds)  # type: ignore[arg-type]
        cut = thresholds[0]
        print(state.summary(cut, level=level) if args.summary else state.report_text(cut), end="")
        return 0
    hint = "--all prints them, --output FILE saves them"
    if args.table in ("disparity", "fairness"):
        with showing("evaluate", at_terminal()):
            state = accumulate(source, **columns, thresholds=thresholds)  # type: ignore[arg-type]
        strata = [k for k in args.by if k != args.sensitive]
        if args.table == "disparity":
            reference = args.reference or "best"
            table = state.disparity(
                args.sensitive, reference=reference, threshold=thresholds[0], ci=args.ci,
                level=level,
            )  # fmt: skip
            keys = [*strata, "metric", args.sensitive]
        else:
            method = args.method or "between_groups"
            table = state.fairness(args.sensitive, method=method, threshold=thresholds[0])
            keys = strata
        emit(table, keys, None, args, fmt, hint)
        return 0
    if args.table == "drift":
        with showing("evaluate", at_terminal()):
            state = accumulate(source, **drift_columns(columns), thresholds=thresholds)
        table = state.drift(drift_baseline(args, columns, thresholds), bins=args.bins or 10)
        emit(table, [*args.by, *(["model"] if "model" in table.columns else [])], None, args,
             fmt, hint)  # fmt: skip
        return 0
    if args.table != "metrics":
        with showing("evaluate", at_terminal()):
            state = accumulate(source, **columns)  # type: ignore[arg-type]
        if args.table == "tests":
            table = state.roc_test(level=level)
            keys = [*args.by, "model_a", "model_b"]
        elif args.table == "per-class":
            table = state.per_class(**intervals)
            keys = [*args.by, "class"]
        else:
            table = state.confusion_matrix()
            keys = [*args.by, "actual", "predicted"]
        emit(table, keys, None, args, fmt, hint)
        return 0
    resampling = {
        "bootstrap": 200 if args.replicates is None else args.replicates,
        "row_id": args.row_id,
        "seed": args.seed or 0,
        "jackknife": args.jackknife_by,
    }
    table = evaluate(
        source,
        threshold=thresholds if len(thresholds) > 1 else thresholds[0],
        alpha=0.5 if args.alpha is None else args.alpha,
        beta=1.0 if args.beta is None else args.beta,
        metrics=args.metric,
        folds=args.folds,
        repeats=args.repeats,
        progress=at_terminal(),
        **intervals,
        **(resampling if args.ci in ("bootstrap", "jackknife") else {}),
        **columns,  # type: ignore[arg-type]
    )
    cells = [c for c in (args.repeats, args.folds) if c] + (["estimate"] if args.folds else [])
    by = [b for b in args.by if args.ci != "jackknife" or b != args.jackknife_by]
    keys = [*by, *cells, *(["model"] if offers(args.task, "models") else [])]
    keys += ["threshold"] if len(thresholds) > 1 else []
    names = (
        summary_columns(args.task)
        if not args.metric
        else [c for c in table.columns if c not in keys]
    )
    emit(table, keys, names, args, fmt, display.MORE_HINT)
    return 0


def _demo(args: argparse.Namespace) -> int:
    fmt = output_format(args.output, args.format)
    folder = args.dir or tempfile.mkdtemp(prefix="streameval-demo-")
    try:
        generate_predictions(folder, rows=args.rows)
        display.note(f"wrote a synthetic prediction log of {args.rows:,} rows to {folder}")
        display.note(
            f"$ streameval evaluate {folder} --label label --score score --by segment --by day"
        )
        table = evaluate(
            folder, label="label", score="score", by=["segment", "day"], progress=at_terminal()
        )
        emit(table, ["segment", "day"], summary_columns("binary"), args, fmt)
    finally:
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)
            display.note(f"removed {folder} (pass --dir FOLDER to keep the log)")
    return 0


def _warning(message: Warning | str, *_args: object, **_kwargs: object) -> None:
    """A warning as one line for people: ``streameval: warning: …``."""
    display.note(f"streameval: warning: {one_line(str(message))}")


def _quiet_stdout() -> None:
    """After the reader of stdout went away: send what is left to /dev/null, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = _build().parse_args(argv)
    except SystemExit as exc:  # a usage error (one line, status 2) or --help (status 0)
        return exc.code if isinstance(exc.code, int) else 0
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning
            if hasattr(args, "handler"):  # subcommands registered by other modules
                status = int(args.handler(args))
            else:
                commands = {"evaluate": _evaluate, "report": _report, "demo": _demo}
                status = commands[args.command](args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # `streameval … | head -1`: the reader has all it wanted
        _quiet_stdout()
        return 0
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
