"""The report's cross-run view: a leaderboard keyed by board, model, dataset, subset and selection with each run's
Wilson interval, and every eval run beside the first as `harness runs compare` compares them (one Comparison: the
paired samples' accuracies, intervals, McNemar p and flips)."""

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from harness.errors import UserError
from harness.results.cells import interval_cell, latency_cell
from harness.results.compare import compare_runs
from harness.results.comparison import Comparison
from harness.results.plots import (
    DEVICE_COLOUR,
    HOST_COLOURS,
    Figure,
    Omitted,
    draw,
    ecdf,
    latency_values,
    pyplot,
)
from harness.results.runs import Run, headline

RUN_COLOURS = (DEVICE_COLOUR, *HOST_COLOURS, "#ff7f0e", "#8c564b")


def accuracy_interval(run: Run, subset: str) -> str:
    """The run's own device accuracy on a subset (over all its samples of it)."""
    score = run.eval_summary.subsets[subset].device
    return interval_cell(score.accuracy, score.accuracy_ci95)


def eval_runs(runs: list[Run]) -> list[Run]:
    return [run for run in runs if run.kind == "eval" and not run.eval_summary.anomaly]


@dataclass(frozen=True)
class Standing:
    """One run's figures on one subset: the leaderboard's cell."""

    run: Run
    subset: str
    n: int
    accuracy: str  # with its Wilson 95 % interval
    latency: str  # with its source


@dataclass(frozen=True)
class LeaderboardRow:
    """The newest run of a key (board, model, dataset, subset, selection), and the earlier ones, newest first."""

    board: str
    model: str
    dataset: str
    subset: str
    selection: str
    newest: Standing
    earlier: list[Standing]


def _model_key(run: Run) -> tuple[str, str | None]:
    return run.model, run.record.manifest.model.sha256


def _selection(run: Run) -> tuple:
    """Which samples of a subset the run scored: all, or `limit` of them, drawn by `seed` or the first ones."""
    drawn = run.record.manifest.dataset
    if drawn is None or drawn.limit is None:
        return (None, None, None)
    return (drawn.limit, drawn.order, drawn.seed if drawn.order == "sampled" else None)


def selection_text(selection: tuple) -> str:
    limit, order, seed = selection
    if limit is None:
        return "all samples"
    if order == "sampled":
        return f"{limit} per subset, drawn with seed {seed}"
    return f"the first {limit} samples"


def leaderboard(runs: list[Run]) -> list[LeaderboardRow] | None:
    """A row per board, model, dataset, subset and selection: device accuracy with its Wilson 95 % interval, n
    and the median latency with its source, of the newest run of the key; the earlier runs of the key with it."""
    runs = eval_runs(runs)
    if len(runs) < 2:
        return None
    files = defaultdict(set)  # a model card run with several model files: each file is a model of its own
    for run in runs:
        files[run.model].add(run.record.manifest.model.sha256)
    keyed = defaultdict(list)
    for run in sorted(runs, key=lambda run: run.record.manifest.started, reverse=True):
        summary = run.eval_summary
        for subset, entry in summary.subsets.items():
            key = (run.board, _model_key(run), summary.dataset, subset, _selection(run))
            standing = Standing(run, subset, entry.n, accuracy_interval(run, subset), latency_cell(headline(run)))
            keyed[key].append(standing)
    rows = []
    for (board, (card, sha256), _, subset, selection), standings in keyed.items():
        newest = standings[0]
        model = f"{card} ({(sha256 or 'no sha256')[:12]})" if len(files[card]) > 1 else card
        dataset = newest.run.eval_summary.dataset_label
        rows.append(LeaderboardRow(board, model, dataset, subset, selection_text(selection), newest, standings[1:]))
    return sorted(rows, key=lambda row: (row.dataset, row.subset, row.selection, row.model, row.board))


@dataclass(frozen=True)
class Pairing:
    base: Run
    other: Run
    result: Comparison | None  # compare_runs' answer, as `harness runs compare` gives it
    refused: str | None  # why the two cannot be compared


def pairings(runs: list[Run]) -> list[Pairing]:
    runs = eval_runs(runs)
    found = []
    for other in runs[1:]:
        try:
            found.append(Pairing(runs[0], other, compare_runs(runs[0], other), None))
        except UserError as why:
            found.append(Pairing(runs[0], other, None, str(why)))
    return found


def _subsets_side_by_side(runs: list[Run]):
    def figure(_) -> object:
        subsets = [s for s in runs[0].eval_summary.subsets if all(s in run.eval_summary.subsets for run in runs)]
        if not subsets:
            raise Omitted("the runs share no subset")
        fig, ax = pyplot().subplots(figsize=(9, 0.35 * len(subsets) * len(runs) + 1.6), layout="constrained")
        step = 0.8 / len(runs)
        for i, run in enumerate(runs):
            colour = RUN_COLOURS[i % len(RUN_COLOURS)]
            for k, subset in enumerate(subsets):
                score = run.eval_summary.subsets[subset].device
                if score.accuracy is None:
                    continue
                low, high = score.accuracy_ci95 or (score.accuracy, score.accuracy)
                y = k + i * step
                ax.plot([100 * low, 100 * high], [y, y], color=colour, linewidth=2)
                ax.plot(100 * score.accuracy, y, "o", color=colour)
            ax.plot([], [], "o-", color=colour, label=f"{i + 1}: {run.id} ({run.eval_summary.latency.source})")
        ax.set_yticks(np.arange(len(subsets)) + step * (len(runs) - 1) / 2, subsets)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("device accuracy %, with its Wilson 95 % interval")
        fig.legend(loc="outside lower center", ncols=1, frameon=False, fontsize="small")
        return fig

    return figure


def _latencies_side_by_side(runs: list[Run]):
    def figure(_) -> object:
        measured = [(i, run, *latency_values(run)) for i, run in enumerate(runs)]
        units = {unit for _, _, values, unit, _ in measured if len(values)}
        if len(units) != 1:
            raise Omitted("the runs' latencies are not in one unit (ms against instructions): not drawn together")
        fig, ax = pyplot().subplots(figsize=(9, 3.4), layout="constrained")
        for i, run, values, unit, axis in measured:
            if not len(values):
                continue
            median, p95 = np.percentile(values, [50, 95])
            label = f"{i + 1}: median {median:,.3g}, p95 {p95:,.3g} {unit} ({run.eval_summary.latency.source})"
            ecdf(ax, values, RUN_COLOURS[i % len(RUN_COLOURS)], label)
            ax.set_xlabel(axis)
        spread = [values for _, _, values, _, _ in measured if len(values)]
        if max(v.max() for v in spread) > 20 * min(v.min() for v in spread):
            ax.set_xscale("log")  # runs an order of magnitude apart: each keeps its shape
        fig.legend(loc="outside lower center", ncols=1, frameon=False, fontsize="small")
        return fig

    return figure


def median_cell(value: float, unit: str) -> str:
    """A latency median of compare's, in ms when timed, in instructions when counted."""
    return f"{value / 1000:,.3f} ms" if unit == "microseconds" else f"{value:,.0f} {unit}"


def side_by_side(runs: list[Run]) -> list[Figure]:
    runs = eval_runs(runs)
    if len(runs) < 2:
        return []
    return [
        draw(
            "Device accuracy per subset, each run over all its own samples of it (unpaired)",
            _subsets_side_by_side(runs),
            runs[0],
        ),
        draw("Device latency, run by run (ECDF)", _latencies_side_by_side(runs), runs[0]),
    ]
