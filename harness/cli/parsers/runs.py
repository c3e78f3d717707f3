"""`harness runs`: list, report, compare and gate the runs of a results folder."""

from harness.cli import exits
from harness.cli.args import RESULTS, command, group
from harness.values import (
    output_file,
    relative_change,
)


def add_runs(commands) -> None:
    runs = group(
        commands,
        "runs",
        "the runs in a results folder: list, report, compare, gate",
        "harness runs check RUN --gates gates.toml",
    )
    listing = command(
        runs, "list", "harness.cli.evaluation:cmd_runs", "list the runs in a results folder", "harness runs list"
    )
    RESULTS.add(listing)

    report = command(
        runs,
        "report",
        "harness.cli.evaluation:cmd_report",
        "write a self-contained HTML report of runs",
        "harness runs report RUN_A RUN_B --out report.html",
    )
    report.add_argument("runs", nargs="+", help="run ids (under --results) or run folders")
    report.add_argument(
        "--out", type=output_file("--out REPORT.html"), default="report.html", help="the HTML file to write"
    )
    report.add_argument("--gates", help="gates TOML file: each run's verdicts in the summary, as `runs check` gives")
    report.add_argument("--baseline", help="run the gates compare latency, arena and flash against (with --gates)")
    RESULTS.add(report)

    compare = command(
        runs,
        "compare",
        "harness.cli.evaluation:cmd_compare",
        "what changed between two runs, with significance",
        "harness runs compare RUN_A RUN_B",
    )
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    RESULTS.add(compare)
    compare.add_argument(
        "--latency-tolerance",
        type=relative_change,
        help="smallest relative latency change called significant (default by source: emulated 0, device 0.02; "
        "sim latency is host time and is judged only with this option)",
    )

    check = command(
        runs,
        "check",
        "harness.cli.evaluation:cmd_check",
        f"gate a run: exit {exits.FAILED} when a gate fails",
        "harness runs check RUN --gates gates.toml --baseline BASELINE --junit gates.xml",
    )
    check.add_argument("run")
    check.add_argument("--gates", required=True, help="gates TOML file (see docs/lab-ci.md)")
    check.add_argument("--baseline", help="run to compare latency, arena and flash against")
    check.add_argument(
        "--junit", type=output_file("--junit GATES.xml"), help="write JUnit XML with one test case per gate and subset"
    )
    check.add_argument(
        "--strict", action="store_true", help="fail a gate that cannot be judged (no baseline, no such figure)"
    )
    RESULTS.add(check)
