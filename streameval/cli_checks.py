"""Checks of command-line arguments, made before any data is read.

An option that belongs to another task (or to an option not given) is an error that names
what it belongs to.

>>> output_format("m.csv", None), output_format("-", None)
('csv', 'csv')
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import StreamevalError
from .tasks.registry import offering, offers, taking

FORMATS = ("csv", "json", "parquet")


def _fail(what: str, hint: str) -> StreamevalError:
    return StreamevalError(f"{what}; hint: {hint}")


def _belongs(option: str, given: object, task: str, tasks: Sequence[str]) -> None:
    """``option`` was given but applies only to ``tasks``."""
    if given is None or given is False or given == [] or task in tasks:
        return
    names = " or ".join(f"--task {t}" for t in tasks)
    raise _fail(
        f"expected {option} only with {names}, got it with --task {task}",
        f"drop {option}, or pass --task {tasks[0]}",
    )


def _needs(option: str, given: object, present: bool, needed: str) -> None:
    """``option`` was given without ``needed``, the option it belongs to."""
    if given is None or given is False or given == [] or present:
        return
    if isinstance(given, list):
        given = ",".join(map(str, given))
    shown = option if given is True else f"{option} {given!r}"
    raise _fail(
        f"expected {option} only with {needed}, got {shown} without it",
        f"add {needed.split(' (')[0]}, or drop {option}",
    )


def check_output_path(output: str, option: str = "--output") -> None:
    """Refuse an output path that is a folder or lies below a file, before any work."""
    path = Path(output)
    if path.is_dir():
        raise _fail(
            f"expected {option} {output!r} to be a file, found a folder there",
            "name a file inside it",
        )
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise _fail(
                    f"expected {option} {output!r} below a folder, but {str(parent)!r} is a file",
                    "pick a path whose folders are folders",
                )
            if not os.access(parent, os.W_OK):
                raise _fail(
                    f"expected to write {option} {output!r}, but {str(parent)!r} is not writable",
                    "pick a writable folder",
                )
            break


def output_format(output: str | None, fmt: str | None) -> str | None:
    """The format of ``--output`` (from ``--format`` or its suffix), checked before any work.

    >>> output_format("m.csv", None), output_format("-", None), output_format("m.txt", "json")
    ('csv', 'csv', 'json')
    """
    if output is None:
        if fmt is not None:
            raise _fail(
                f"expected --format {fmt} with --output, got no --output",
                "add --output FILE (or --output - for stdout)",
            )
        return None
    if output == "-":
        if fmt == "parquet" and sys.stdout.isatty():
            raise _fail(
                "expected a pipe or a file for --output - --format parquet, got a terminal",
                "redirect it: --output - --format parquet > metrics.parquet",
            )
        return fmt or "csv"
    suffix = Path(output).suffix.lower().lstrip(".")
    if fmt is None and suffix not in FORMATS:
        raise _fail(
            f"expected --output to end in .parquet, .csv or .json, got {output!r}",
            "pick one of those formats, or pass --format csv|json|parquet",
        )
    check_output_path(output)
    return fmt or suffix


def check_inputs(args: argparse.Namespace) -> None:
    """Options of ``evaluate`` and ``report`` that belong to another task."""
    task = args.task
    _belongs("--classes", args.classes, task, taking("classes"))
    _belongs("--top-k", args.top_k, task, taking("top_k"))
    _belongs("--power", args.power, task, taking("power"))
    _belongs("--positive", args.positive, task, taking("positive"))
    _belongs("--query", args.query, task, taking("query"))
    _belongs("--k", args.k, task, taking("k"))
    if args.top_k is not None and args.top_k < 1:
        raise _fail(f"expected --top-k of 1 or more, got {args.top_k}", "--top-k 2")


def check_level(level: float | None) -> None:
    """A confidence level strictly between 0 and 1 (None: not given)."""
    if level is not None and not 0 < level < 1:
        raise _fail(f"expected --level between 0 and 1, got {level}", "--level 0.95")


def check_beta_option(beta: float | None) -> None:
    """F-beta's beta, 0 or more (None: not given)."""
    if beta is not None and not beta >= 0:
        raise _fail(f"expected --beta of 0 or more, got {beta}", "--beta 2")


def _check_fairness(args: argparse.Namespace) -> None:
    """The options of ``--table disparity`` and ``--table fairness``."""
    table = args.table
    fair = table in ("disparity", "fairness")
    _needs("--sensitive", args.sensitive, fair, "--table disparity (or fairness)")
    _needs("--reference", args.reference, table == "disparity", "--table disparity")
    _needs("--method", args.method, table == "fairness", "--table fairness")
    if not fair:
        return
    if args.sensitive is None or args.sensitive not in args.by:
        raise _fail(
            f"expected --sensitive to name a --by key with --table {table}, got "
            f"{args.sensitive!r} with --by {args.by}",
            "--by segment --sensitive segment (other --by keys are the strata, e.g. --by day)",
        )
    if len(args.threshold or []) > 1:
        raise _fail(
            f"expected one --threshold with --table {table}, got {len(args.threshold)}",
            "pass the one the predictions are cut at",
        )
    if table == "fairness" and args.ci is not None:
        raise _fail(
            f"expected no --ci with --table fairness (its summaries have no intervals), got "
            f"--ci {args.ci}",
            "drop --ci, or use --table disparity --ci wilson for each slice's intervals",
        )
    if args.ci in ("bootstrap", "jackknife"):
        raise _fail(
            f"expected --ci wilson or clopper-pearson with --table {table}, got --ci {args.ci}",
            "--ci wilson",
        )
    if args.ci is not None and args.reference == "overall":
        raise _fail(
            "expected a reference slice with --ci, got --reference overall (the overall rate "
            "holds each slice's own rows: the two are not independent)",
            "--reference best, or the value of the slice to compare with",
        )


def _check_drift(args: argparse.Namespace) -> None:
    """The options of ``--table drift``."""
    drift = args.table == "drift"
    _needs("--against", args.against, drift, "--table drift")
    _needs("--against-by", args.against_by, drift, "--table drift")
    _needs("--bins", args.bins, drift, "--table drift")
    if drift and not args.against:
        raise _fail(
            "expected --against with --table drift, got none",
            "--against reference-state.parquet, or --against last_month/ (predictions)",
        )
    extra = [k for k in args.against_by or [] if k not in args.by]
    if extra:
        raise _fail(
            f"expected --against-by keys among the --by keys {args.by}, got {extra}",
            "--by segment --against-by segment",
        )
    if args.bins is not None and not 2 <= args.bins <= 10_000:
        raise _fail(f"expected --bins from 2 to 10000, got {args.bins}", "--bins 10")


def check_evaluate(args: argparse.Namespace) -> str | None:
    """Every ``evaluate`` argument, before any data is read; returns the output format."""
    task, ci, table = args.task, args.ci, args.table
    check_inputs(args)
    _belongs("--alpha", args.alpha, task, taking("alpha"))
    _belongs("--beta", args.beta, task, taking("beta"))
    _belongs("--threshold", args.threshold, task, taking("threshold"))
    if args.summary and not offers(task, "summary"):
        raise _fail(
            f"expected --task {' or '.join(offering('summary'))} with --summary, got --task {task}",
            "drop --summary",
        )
    _check_fairness(args)
    _check_drift(args)
    if table != "metrics":
        capability = {"tests": "models", "report": "classification", "drift": "histogram"}
        needed = capability.get(table, "classes")
        needed = "thresholds" if table in ("disparity", "fairness") else needed
        tasks = offering(needed) + (offering("labels") if table == "per-class" else [])
        _belongs(f"--table {table}", True, task, tasks)
    intervals = ci is not None or args.summary or table == "tests"
    _needs("--level", args.level, intervals, "--ci (or --summary, --table tests)")
    _needs("--auc-method", args.auc_method, ci is not None, "--ci")
    for option, value in (("--replicates", args.replicates), ("--seed", args.seed),
                          ("--row-id", args.row_id)):  # fmt: skip
        _needs(option, value, ci == "bootstrap", "--ci bootstrap")
    _needs("--jackknife-by", args.jackknife_by, ci == "jackknife", "--ci jackknife")
    _needs("--repeats", args.repeats, args.folds is not None, "--folds")
    metrics_table = table == "metrics" and not args.summary
    for option, value in (("--metric", args.metric), ("--folds", args.folds)):
        _needs(option, value, metrics_table, "the metric table (no --table, no --summary)")
    if ci is not None and (
        table in ("confusion", "tests", "report", "fairness", "drift") or args.summary
    ):
        raise _fail(
            f"expected --ci with the metric, per-class or disparity table, got it with "
            f"{'--summary' if args.summary else f'--table {table}'}",
            "drop --ci (--summary and --table tests have their intervals at --level)",
        )
    if ci in ("bootstrap", "jackknife") and args.folds:
        raise _fail(
            f"expected --ci {ci} without --folds, got both (the folds' rows already carry "
            "their mean and sd)",
            "drop --folds, or use --ci wilson with --folds",
        )
    if args.jackknife_by and args.jackknife_by not in args.by:
        raise _fail(
            f"expected --jackknife-by to name a --by key, got {args.jackknife_by!r} with --by "
            f"{args.by}",
            f"add --by {args.jackknife_by}",
        )
    if ci == "jackknife" and not args.jackknife_by:
        raise _fail(
            "expected --jackknife-by KEY with --ci jackknife, got none",
            "name the key whose values are left out in turn, e.g. --jackknife-by day",
        )
    if args.replicates is not None and args.replicates < 1:
        raise _fail(
            f"expected --replicates of 1 or more, got {args.replicates}", "--replicates 200"
        )
    check_level(args.level)
    if table == "report" and (args.output or args.format):
        raise _fail(
            "expected --table report without --output or --format: it prints text",
            "drop them, and redirect the printout (> report.txt)",
        )
    if table == "report" and len(args.threshold or []) > 1:
        raise _fail(
            f"expected one --threshold with --table report, got {len(args.threshold)}",
            "pass the one the report's predictions are cut at",
        )
    for t in args.threshold or []:
        if not math.isfinite(t):
            raise _fail(f"expected a finite --threshold, got {t}", "--threshold 0.5")
    if args.alpha is not None and not 0 < args.alpha < 1:
        raise _fail(f"expected --alpha between 0 and 1, got {args.alpha}", "--alpha 0.5")
    check_beta_option(args.beta)
    return output_format(args.output, args.format)


def add_output(parser: argparse.ArgumentParser) -> None:
    """Add the options of a command that writes or prints a table: output, format, all."""
    parser.add_argument(
        "--output", help="write the table to FILE.parquet, .csv or .json, or '-' for stdout"
    )
    parser.add_argument(
        "--format", choices=FORMATS, help="the --output format (default: its suffix; csv for -)"
    )
    parser.add_argument(
        "--all", action="store_true", help="print every column and row (in blocks that fit)"
    )
