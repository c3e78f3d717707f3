"""`harness report`: one self-contained HTML page (plots embedded as SVG) for one or more runs."""

from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from harness import __version__
from harness.console import percent
from harness.errors import UserError, setting
from harness.files import write_atomically
from harness.results import stream_report
from harness.results.plots import ANOMALY_FIGURES, FIGURES, STREAM_FIGURES
from harness.results.report import anomaly_rows, pool_note
from harness.results.runs import EvalHeadline, Run, headline


def latency_cell(head: EvalHeadline) -> str:
    """An eval run's median latency in its unit, with its source."""
    if head.instructions_median:
        return f"{head.instructions_median:,.0f} instr ({head.latency_source})"
    if head.latency_median_us:
        return f"{head.latency_median_us / 1000:.2f} ms ({head.latency_source})"
    return f"n/a ({head.latency_source})"


def _leaderboard(runs: list[Run]) -> dict | None:
    runs = [run for run in runs if run.kind == "eval"]
    if len(runs) < 2:
        return None
    cells = {}
    for run in runs:  # later runs of the same pair replace earlier ones
        head = headline(run)
        cells[(run.model, run.board)] = f"{percent(head.device_accuracy)} % · {latency_cell(head)}"
    return {
        "models": sorted({run.model for run in runs}),
        "boards": sorted({run.board for run in runs}),
        "cells": cells,
    }


def _figures(run: Run) -> dict[str, str]:
    return {title: draw(run) for title, draw in _figure_set(run).items()}


def _figure_set(run: Run) -> dict:
    if run.kind == "stream":
        return STREAM_FIGURES
    return ANOMALY_FIGURES if run.eval_summary.anomaly else FIGURES


def require_writable(out: Path) -> None:
    """The report's file can be written: not a folder, its parent not a file (refused before anything is)."""
    if out.is_dir():
        raise UserError(f"{out} is a folder; pass the HTML file to write as {setting('out')}, e.g. {out}/report.html")
    parent = next((p for p in out.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UserError(f"{parent} is a file, not a folder; pass an HTML file in a folder as {setting('out')}")


def write_report(runs: list[Run], out: Path) -> Path:
    require_writable(out)
    env = Environment(loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["j2", "html"]))
    page = env.get_template("report.html.j2").render(
        runs=runs,
        figures={run.id: _figures(run) for run in runs},
        leaderboard=_leaderboard(runs),
        pct=percent,
        pool_note=pool_note,
        anomaly_rows=anomaly_rows,
        stream=stream_report,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
    )
    try:
        write_atomically(out, lambda partial: partial.write_text(page))
    except OSError as exc:  # the partial file is gone: name the file the user asked for
        raise UserError(f"cannot write {out} ({exc.strerror or exc}); pass a writable {setting('out')}") from None
    return out
