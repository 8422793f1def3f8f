"""Command-line subcommands of jobs: ``run`` and ``state inspect|merge|metrics``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import StreamevalError


def register(sub: Any) -> None:
    """Add ``run`` and ``state`` to the ``streameval`` subcommands."""
    run = sub.add_parser("run", help="run a scheduled job: update its state store and outputs")
    run.add_argument("job", help="the job file (TOML)")
    run.add_argument("--dry-run", action="store_true", help="list what would be processed")
    run.add_argument("--full-refresh", action="store_true", help="recompute every partition")
    run.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    run.set_defaults(handler=_run)

    state = sub.add_parser("state", help="look into a state store or state files")
    verbs = state.add_subparsers(dest="state_command", required=True, parser_class=type(state))
    inspect = verbs.add_parser("inspect", help="spec, versions, partitions and sizes")
    inspect.add_argument("path", help="a store folder or a state file")
    inspect.add_argument("--files", action="store_true", help="list each partition's files")
    inspect.add_argument("--json", action="store_true", help="print a store's manifest as JSON")
    inspect.set_defaults(handler=_inspect)

    merge = verbs.add_parser("merge", help="merge state files (and stores) into one state file")
    merge.add_argument("paths", nargs="+", help="state files or store folders")
    merge.add_argument("--output", required=True, help="the merged state file (.parquet)")
    merge.set_defaults(handler=_merge)

    metrics = verbs.add_parser("metrics", help="the metric table of a state file or store")
    metrics.add_argument("path", help="a state file or a store folder")
    metrics.add_argument(
        "--by-window", action="append", help="store: windows ending at --end (1d, 7d, mtd, all)"
    )
    metrics.add_argument("--end", help="store: the windows' end day (default: the last day)")
    metrics.add_argument("--threshold", action="append", type=float, help="binary: threshold")
    metrics.add_argument("--metric", action="append", help="only these metrics (repeatable)")
    metrics.add_argument("--alpha", type=float, help="regression: pinball quantile")
    metrics.add_argument("--output", help="write the table to FILE.parquet, .csv or .json")
    metrics.set_defaults(handler=_metrics)


def _run(args: argparse.Namespace) -> int:
    from .runner import run_job

    try:
        run_job(args.job, dry_run=args.dry_run, full_refresh=args.full_refresh, quiet=args.quiet)
    except OSError as exc:
        raise StreamevalError(
            f"the job failed on a file operation ({exc}); hint: check that the store and output "
            "folders are writable and the source readable"
        ) from None
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from .tools import _manifest, inspect_text, is_store

    if args.json and is_store(args.path):
        import json

        print(json.dumps(_manifest(args.path)[1], indent=1, sort_keys=True))
    else:
        print(inspect_text(args.path, files=args.files))
    return 0


def _merge(args: argparse.Namespace) -> int:
    from ..cli import output_errors
    from .tools import load_states

    if Path(args.output).suffix.lower() != ".parquet":
        raise StreamevalError(
            f"expected --output to end in .parquet, got {args.output!r}; hint: a merged state "
            "is a Parquet file: name it FILE.parquet"
        )
    state = load_states(args.paths)
    with output_errors(args.output):
        state.write(args.output)
    print(f"wrote a state of {state.table.height:,} rows to {args.output}", file=sys.stderr)
    return 0


def _metrics(args: argparse.Namespace) -> int:
    import polars as pl

    from ..cli import output_errors
    from .tools import is_store, load_states, window_metrics

    options: dict[str, Any] = {}
    if args.threshold:
        options["threshold"] = args.threshold if len(args.threshold) > 1 else args.threshold[0]
    if args.metric:
        options["metrics"] = args.metric
    if args.alpha is not None:
        options["alpha"] = args.alpha
    if args.by_window:
        if not is_store(args.path):
            raise StreamevalError(
                f"expected a store folder with --by-window, got {args.path!r}; hint: a state "
                "file has no days"
            )
        table = window_metrics(args.path, args.by_window, args.end, options)
    else:
        table = load_states([args.path]).metrics(**options)
    if args.output:
        suffix = Path(args.output).suffix.lower()
        writers: dict[str, Callable[[str], Any]] = {
            ".parquet": table.write_parquet,
            ".csv": table.write_csv,
            ".json": table.write_json,
        }
        if suffix not in writers:
            raise StreamevalError(
                f"expected --output to end in .parquet, .csv or .json, got {args.output!r}; "
                "hint: pick one of those formats"
            )
        with output_errors(args.output):
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            writers[suffix](args.output)
        print(f"wrote {table.height} rows to {args.output}", file=sys.stderr)
        return 0
    with pl.Config(tbl_rows=200, tbl_cols=-1, tbl_width_chars=250, float_precision=4):
        print(table)
    return 0
