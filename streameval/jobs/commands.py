"""Command-line subcommands of jobs: ``run`` and ``state inspect|merge|metrics``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cli_checks import check_beta_option, check_output_path, output_format
from ..cli_help import add_command
from ..cli_output import emit, output_errors
from ..display import FittedStream, note, print_text, terminal_width
from ..errors import StreamevalError
from ..progress import at_terminal, showing
from ..spec import Spec
from ..tasks.registry import taking
from .runner import run_job
from .tools import _manifest, inspect_text, is_store, load_states, window_metrics

#: The exit status of a run whose error-severity checks failed (its outputs are written).
CHECKS_FAILED = 3


def register(sub: Any) -> None:
    """Add ``run`` and ``state`` to the ``streameval`` subcommands."""
    run = add_command(
        sub,
        "run",
        "run a scheduled job: update its state store and outputs",
        "Run the job file: compute the new and changed partitions' states, "
        "update the rollups and write the outputs (resumes after a crash).",
    )
    run.add_argument("job", help="the job file (TOML)")
    run.add_argument("--dry-run", action="store_true", help="list what would be processed")
    run.add_argument("--full-refresh", action="store_true", help="recompute every partition")
    run.add_argument(
        "--checks-only",
        action="store_true",
        help="read no source: judge the stored days again by the job's checks",
    )
    run.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    run.set_defaults(handler=_run)

    state = add_command(
        sub,
        "state",
        "inspect, merge or evaluate state stores and state files",
        "Look into a job's state store or state files, merge them, or compute their metric tables.",
    )
    verbs = state.add_subparsers(dest="state_command", required=True, parser_class=type(state))
    inspect = add_command(
        verbs,
        "inspect",
        "spec, versions, partitions and sizes",
        "Show a store's or state file's spec, versions, partitions and sizes.",
    )
    inspect.add_argument("path", help="a store folder or a state file")
    inspect.add_argument("--files", action="store_true", help="list each partition's files")
    inspect.add_argument("--json", action="store_true", help="print a store's manifest as JSON")
    inspect.set_defaults(handler=_inspect)

    merge = add_command(
        verbs,
        "merge",
        "merge state files (and stores) into one state file",
        "Merge state files and stores computed with the same spec into one.",
    )
    merge.add_argument("paths", nargs="+", help="state files or store folders")
    merge.add_argument("--output", required=True, help="the merged state file (.parquet)")
    merge.set_defaults(handler=_merge)

    metrics = add_command(
        verbs,
        "metrics",
        "the metric table of a state file or store",
        "The metric table of a state file or store, or of its windows of days.",
        "On a terminal, the table fits its width; piped or redirected, it is CSV.",
    )
    metrics.add_argument("path", help="a state file or a store folder")
    metrics.add_argument(
        "--by-window", action="append", help="store: windows ending at --end (1d, 7d, mtd, all)"
    )
    metrics.add_argument("--end", help="store: the windows' end day (default: the last day)")
    metrics.add_argument("--threshold", action="append", type=float, help="binary: threshold")
    metrics.add_argument("--metric", action="append", help="only these metrics (repeatable)")
    metrics.add_argument("--alpha", type=float, help="regression: pinball quantile")
    metrics.add_argument("--beta", type=float, help="binary, multiclass: beta of the fbeta columns")
    metrics.add_argument(
        "--output", help="write the table to FILE.parquet, .csv or .json, or '-' for stdout"
    )
    metrics.add_argument(
        "--format",
        choices=["csv", "json", "parquet"],
        help="the --output format (default: its suffix; csv for -)",
    )
    metrics.add_argument(
        "--all", action="store_true", help="print every column and row (in blocks that fit)"
    )
    metrics.set_defaults(handler=_metrics)


def _run(args: argparse.Namespace) -> int:
    width = None if args.dry_run else terminal_width(sys.stderr)
    stream = None if width is None else FittedStream(sys.stderr, width)
    try:
        report = run_job(
            args.job,
            dry_run=args.dry_run,
            full_refresh=args.full_refresh,
            checks_only=args.checks_only,
            quiet=args.quiet,
            stream=stream,  # type: ignore[arg-type]
        )
    except OSError as exc:
        raise StreamevalError(
            f"the job failed on a file operation ({exc}); hint: check that the store and output "
            "folders are writable and the source readable"
        ) from None
    return CHECKS_FAILED if report.checks_failed else 0


def _inspect(args: argparse.Namespace) -> int:
    if args.json and is_store(args.path):
        import json

        print(json.dumps(_manifest(args.path)[1], indent=1, sort_keys=True))
    else:
        print_text(inspect_text(args.path, files=args.files))
    return 0


def _merge(args: argparse.Namespace) -> int:
    if Path(args.output).suffix.lower() != ".parquet":
        raise StreamevalError(
            f"expected --output to end in .parquet, got {args.output!r}; hint: a merged state "
            "is a Parquet file: name it FILE.parquet"
        )
    check_output_path(args.output)
    with showing("state merge", at_terminal()):
        state = load_states(args.paths)
        with output_errors(args.output):
            state.write(args.output)
    keys = list(state.spec.keys)
    groups = state.table.select(keys).n_unique() if keys else 1
    s = "" if groups == 1 else "s"
    note(
        f"wrote the merged {state.spec.kind} state of {len(args.paths)} input(s), {groups:,} "
        f"group{s}, to {args.output}"
    )
    return 0


def _store_kind(path: str) -> str | None:
    """The task of a store's states, from its manifest (None before its first run)."""
    spec = _manifest(path)[1].get("spec")
    return Spec.from_json(spec).kind if spec else None


_OPTION_TASKS = {
    "--alpha": taking("alpha"),
    "--beta": taking("beta"),
    "--threshold": taking("threshold"),
}


def _metrics(args: argparse.Namespace) -> int:
    fmt = output_format(args.output, args.format)
    if args.end and not args.by_window:
        raise StreamevalError(
            f"expected --end {args.end} only with --by-window, got it without; hint: add "
            "--by-window 1d (or 7d, mtd, all)"
        )
    options: dict[str, Any] = {}
    if args.threshold:
        options["threshold"] = args.threshold if len(args.threshold) > 1 else args.threshold[0]
    if args.metric:
        options["metrics"] = args.metric
    if args.alpha is not None:
        options["alpha"] = args.alpha
    if args.beta is not None:
        check_beta_option(args.beta)
        options["beta"] = args.beta
    if args.by_window and not is_store(args.path):
        raise StreamevalError(
            f"expected a store folder with --by-window, got {args.path!r}; hint: a state "
            "file has no days"
        )
    state = None if args.by_window else load_states([args.path])
    kind = state.spec.kind if state is not None else _store_kind(args.path)
    given = {"--alpha": args.alpha, "--beta": args.beta, "--threshold": args.threshold}
    for option, tasks in _OPTION_TASKS.items():
        if given[option] and kind is not None and kind not in tasks:
            raise StreamevalError(
                f"expected {option} only with a {' or '.join(tasks)} state, got a {kind} "
                f"state in {args.path!r}; hint: drop {option}"
            )
    if state is None:
        table = window_metrics(args.path, args.by_window, args.end, options)
    else:
        table = state.metrics(**options)
    keys = list(table.columns[: table.columns.index("n")]) if "n" in table.columns else []
    keys += ["threshold"] if args.threshold and len(args.threshold) > 1 else []
    emit(table, keys, None, args, fmt)
    return 0
