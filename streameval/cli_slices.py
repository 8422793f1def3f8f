"""The ``slices`` command: the slices of the data where a model does significantly worse."""

from __future__ import annotations

import argparse
from typing import Any

from .cli_checks import add_output, check_level, check_output_path, output_format
from .cli_help import add_command
from .cli_output import emit
from .progress import at_terminal, showing
from .slices import find_slices
from .spec import parse_precision

#: Printed columns besides the slice (the metric's come first).
SHOWN = ("difference", "adjusted_p", "n", "rest", "rest_n", "parent")


def register(sub: Any) -> None:
    """Add ``slices`` to the ``streameval`` subcommands."""
    cmd = add_command(
        sub,
        "slices",
        "the slices where a model does significantly worse than on the rest",
        "List the slices (a value of a feature, or a pair of values of two features) whose "
        "metric is significantly worse than the rest of the data's, worst first, with "
        "intervals and p-values adjusted over every slice. Every slice is counted in one "
        "read of the data.",
    )
    cmd.add_argument("source", nargs="+", help="Parquet files, directories or globs")
    cmd.add_argument("--label", required=True, help="the 0/1 (or boolean) label column")
    cmd.add_argument("--score", required=True, help="the score column")
    cmd.add_argument(
        "--features", nargs="+", required=True, help="the columns whose values make slices"
    )
    cmd.add_argument(
        "--depth", type=int, choices=[1, 2], default=2, help="1: single features; 2: pairs too"
    )
    cmd.add_argument("--min-n", type=int, default=500, help="fewest rows of a slice judged (500)")
    cmd.add_argument(
        "--metric",
        default="roc_auc",
        help="roc_auc (default), or a proportion at --threshold: accuracy, recall, precision, …",
    )
    cmd.add_argument("--weight", help="sample weight column")
    cmd.add_argument("--positive", help="the positive label value (default 1 / true)")
    cmd.add_argument("--threshold", type=float, default=0.5, help="a proportion's threshold (0.5)")
    cmd.add_argument("--precision", help="'exact' or the score buckets' mantissa bits (roc_auc: 6)")
    cmd.add_argument("--level", type=float, default=0.95, help="the intervals' level (0.95)")
    cmd.add_argument(
        "--significance",
        type=float,
        default=0.05,
        help="adjusted p-value at or below which a worse slice is listed (0.05)",
    )
    cmd.add_argument(
        "--correction",
        choices=["bh", "by", "holm", "none"],
        default="bh",
        help="Benjamini-Hochberg (default), Benjamini-Yekutieli, Holm, or none",
    )
    cmd.add_argument(
        "--every", action="store_true", help="list every slice judged, not only the worse"
    )
    cmd.add_argument(
        "--inherited",
        action="store_true",
        help="also list the pairs no worse than their worse single feature's slice",
    )
    cmd.add_argument(
        "--max-values", type=int, default=1000, help="most distinct values of a feature (1000)"
    )
    cmd.add_argument(
        "--memory", type=float, default=4.0, help="most GiB the slices' histograms may take (4)"
    )
    cmd.add_argument("--drop-nulls", action="store_true", help="drop rows with nulls, with a count")
    add_output(cmd)
    cmd.set_defaults(handler=_slices)


def _slices(args: argparse.Namespace) -> int:
    fmt = output_format(args.output, args.format)
    if args.output and args.output != "-":
        check_output_path(args.output)
    check_level(args.level)
    source = args.source if len(args.source) > 1 else args.source[0]
    with showing("slices", at_terminal()):
        table = find_slices(
            source,
            label=args.label,
            score=args.score,
            features=args.features,
            depth=args.depth,
            metric=args.metric,
            min_n=args.min_n,
            weight=args.weight,
            positive=args.positive,
            threshold=args.threshold,
            precision=None if args.precision is None else parse_precision(args.precision),
            level=args.level,
            significance=args.significance,
            correction=args.correction,
            every=args.every,
            inherited=args.inherited,
            max_values=args.max_values,
            memory=int(args.memory * 2**30),
            drop_nulls=args.drop_nulls,
        )
    if fmt not in ("parquet", "json"):  # (CSV and the terminal: the slice says it all)
        table = table.drop("features", "values")
    hint = "--all prints them, --output FILE saves them"
    emit(table, ["rank", "slice"], [args.metric, *SHOWN], args, fmt, hint)
    return 0
