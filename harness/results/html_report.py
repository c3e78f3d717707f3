"""`harness runs report`: one self-contained HTML page (figures inline as SVG) for one or more runs."""

from datetime import UTC, datetime
from pathlib import Path

from harness import __version__
from harness.console import percent
from harness.errors import UserError, setting
from harness.files import check_output, write_atomically
from harness.results import cross_run, stream_report
from harness.results.glance import VERDICT_WORDS, Gated, glances
from harness.results.layer_plots import trace_figure
from harness.results.plots import ANOMALY_FIGURES, FIGURES, Figure, draw
from harness.results.report import anomaly_rows, pool_note
from harness.results.runs import Run
from harness.results.stream_plots import STREAM_FIGURES


def _figures(run: Run) -> list[Figure]:
    if run.kind == "stream":
        return [draw(title, figure, run) for title, figure in STREAM_FIGURES.items()]
    chosen = ANOMALY_FIGURES if run.eval_summary.anomaly else FIGURES
    return [draw(title, figure, run) for title, figure in chosen.items()]


def _trace_figures(run: Run) -> list[Figure]:
    """A figure per layer trace the run kept (`harness eval --trace-layers N`)."""
    return [trace_figure(trace) for trace in run.eval_summary.layer_traces] if run.kind == "eval" else []


def _made_up(runs: list[Run]) -> list[str]:
    """The made-up datasets (the demo sets) the eval runs were scored on, as each says what it is."""
    summaries = [run.eval_summary for run in runs if run.kind == "eval"]
    return sorted({summary.dataset_label for summary in summaries if summary.synthetic})


def require_writable(out: Path) -> None:
    """The report's file can be written: nothing there yet or a regular file (never a device, a FIFO, a socket
    or a folder), in a folder (refused before anything is read or written)."""
    if out.is_dir():
        raise UserError(f"{out} is a folder; pass the HTML file to write as {setting('out')}, e.g. {out}/report.html")
    check_output(out, setting("out"))
    parent = next((p for p in out.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UserError(f"{parent} is a file, not a folder; pass an HTML file in a folder as {setting('out')}")


def render(runs: list[Run], verdicts: dict[str, Gated] | None = None, baseline: Run | None = None) -> str:
    """The page; `verdicts`: each run's gates as `harness runs check` judged them (against `baseline`)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["j2", "html"]))
    verdicts = verdicts or {}
    return env.get_template("report.html.j2").render(
        runs=runs,
        glances=glances(runs, verdicts),
        gated=verdicts,
        baseline=baseline,
        verdict_words=VERDICT_WORDS,
        figures={run.id: _figures(run) for run in runs},
        trace_figures={run.id: _trace_figures(run) for run in runs},
        made_up=_made_up(runs),
        leaderboard=cross_run.leaderboard(runs),
        pairings=cross_run.pairings(runs),
        side_by_side=cross_run.side_by_side(runs),
        cross=cross_run,
        pct=percent,
        pool_note=pool_note,
        anomaly_rows=anomaly_rows,
        stream=stream_report,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
    )


def write_report(
    runs: list[Run], out: Path, verdicts: dict[str, Gated] | None = None, baseline: Run | None = None
) -> Path:
    require_writable(out)
    page = render(runs, verdicts, baseline)
    try:
        write_atomically(out, lambda partial: partial.write_text(page), setting("out"))
    except OSError as exc:  # the partial file is gone: name the file the user asked for
        raise UserError(f"cannot write {out} ({exc.strerror or exc}); pass a writable {setting('out')}") from None
    return out
