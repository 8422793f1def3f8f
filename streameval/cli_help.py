"""The command line's help: each command's summary, description and examples."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

EXAMPLES = {
    "streameval": [
        ("try it on a generated log", "streameval demo"),
        ("metrics per segment and day",
         "streameval evaluate preds/ --label label --score score --by segment --by day"),
        ("an HTML report", "streameval report preds/ --label label --score score --by segment "
         "--by day --output report.html"),
        ("a nightly job", "streameval run job.toml"),
    ],
    "evaluate": [
        ("binary metrics per segment and day",
         "streameval evaluate preds/ --label label --score score --by segment --by day"),
        ("saved as Parquet", "streameval evaluate 'preds/*.parquet' --label label --score score "
         "--output metrics.parquet"),
        ("bootstrap intervals of every metric", "streameval evaluate preds/ --label label "
         "--score score --by segment --ci bootstrap --row-id id"),
        ("multiclass", "streameval evaluate preds/ --task multiclass --label animal "
         "--prediction guess --scores p_cat,p_dog,p_bird --classes cat,dog,bird"),
        ("regression", "streameval evaluate preds/ --task regression --label y --prediction "
         "y_hat --by segment"),
        ("ranking, at 5 and 10", "streameval evaluate clicks/ --task ranking --label relevance "
         "--score s --query query_id --k 5 --k 10"),
        ("multilabel, a 0/1 column and a score a label", "streameval evaluate tagged/ --task "
         "multilabel --label is_news,is_sport --scores p_news,p_sport --by segment"),
        ("each segment's TPR, FPR, selection rate per day", "streameval evaluate preds/ --label "
         "label --score score --by day --by segment --table disparity --sensitive segment"),
        ("each day's score drift per segment from the first day", "streameval evaluate preds/ "
         "--label label --score score --by day --by segment --table drift --against "
         "preds/day=2026-09-29 --against-by segment"),
    ],
    "report": [
        ("metric table, trends over days and curves", "streameval report preds/ --label label "
         "--score score --by segment --by day --output report.html"),
        ("each day's AUC against one day", "streameval report preds/ --label label --score "
         "score --by segment --by day --baseline 2026-10-01 --output report.html"),
    ],
    "slices": [
        ("the worst slices and pairs of slices by AUC", "streameval slices preds/ --label label "
         "--score score --features country device plan"),
        ("single features, recall at 0.3, saved", "streameval slices preds/ --label label "
         "--score score --features country device --depth 1 --metric recall --threshold 0.3 "
         "--output worst.csv"),
    ],
    "demo": [
        ("generate 200,000 rows, evaluate them", "streameval demo"),
        ("keep the log to try other commands", "streameval demo --rows 1000000 --dir demo-log"),
    ],
    "run": [
        ("update the store and outputs", "streameval run job.toml"),
        ("what would be processed", "streameval run job.toml --dry-run"),
        ("recompute every partition", "streameval run job.toml --full-refresh"),
    ],
    "state": [
        ("what a store holds", "streameval state inspect store/"),
        ("merge states", "streameval state merge a.parquet b.parquet --output ab.parquet"),
        ("metrics of the last 7 days", "streameval state metrics store/ --by-window 7d"),
    ],
    "inspect": [("a store's partitions and files", "streameval state inspect store/ --files")],
    "merge": [("two stores into one state", "streameval state merge store-a/ store-b/ "
               "--output all.parquet")],
    "metrics": [("windows ending on a day", "streameval state metrics store/ --by-window 1d "
                 "--by-window 7d --end 2026-10-07")],
}  # fmt: skip


def examples(command: str, extra: str = "") -> str:
    """The epilog of a command's help: its examples, then ``extra``.

    >>> print(examples("run").splitlines()[1])
      update the store and outputs:
    """
    lines = ["examples:"]
    for what, line in EXAMPLES[command]:
        lines += [f"  {what}:", f"    $ {line}"]
    return "\n".join(lines) + (f"\n\n{extra}" if extra else "")


class Formatter(argparse.HelpFormatter):
    """Prose wrapped to the terminal; indented lines (the examples) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            if line.startswith(" ") or not line:
                lines.append(indent + line)
            else:
                lines.append(textwrap.fill(line, width, initial_indent=indent,
                                           subsequent_indent=indent))  # fmt: skip
        return "\n".join(lines)


def add_command(sub: Any, name: str, summary: str, description: str, extra: str = "") -> Any:
    """Add the subcommand ``name``: ``summary`` in the list of commands.

    Its own help gives ``description``, then its examples (:data:`EXAMPLES`) and ``extra``.
    """
    return sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=examples(name, extra),
        formatter_class=Formatter,
    )
