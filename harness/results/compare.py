"""`harness runs compare`: what changed between two runs, and whether it is more than chance: the one Comparison
(harness/results/comparison.py) that `runs compare`, its --json and the report show."""

import numpy as np

from harness.errors import UserError
from harness.results import judgeable
from harness.results.comparison import Comparison, pair_accuracy
from harness.results.record import parse_summary
from harness.results.runs import Run
from harness.results.summary import EvalSummary

BOOTSTRAP_RESAMPLES = 2000
FIGURE_OF_COLUMN = {"instructions": "instructions", "microseconds": "micros"}  # samples.parquet column: figure


def bootstrap_median_change(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """Relative change of the median (b over a) and its 95 % percentile-bootstrap interval."""
    rng = np.random.default_rng(seed)
    base = np.median(a)
    change = np.median(b) / base - 1
    draws = [
        np.median(rng.choice(b, len(b))) / np.median(rng.choice(a, len(a))) - 1 for _ in range(BOOTSTRAP_RESAMPLES)
    ]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(change), float(low), float(high)


def _latency_values(run: Run) -> tuple[np.ndarray, str]:
    instructions = [v for v in run.samples.get("instructions", []) if v is not None]
    if instructions:
        return np.array(instructions, dtype=float), "instructions"
    micros = [v for v in run.samples["microseconds"] if v is not None]
    return np.array(micros, dtype=float), "microseconds"


def _eval_summary(run: Run) -> EvalSummary:
    """The run's summary, read from what it stores (`run` needs only id, summary and samples)."""
    summary = parse_summary(run.summary)
    if not isinstance(summary, EvalSummary):
        raise UserError(f"{run.id} is a stream run: compare pairs the samples of two eval runs")
    return summary


def _anomaly_change(a: EvalSummary, b: EvalSummary) -> dict | None:
    """The device's file-level AUC and Top-1 of two anomaly-detection runs, side by side (no test of
    significance: these are figures over files, not paired per-window decisions)."""
    if a.anomaly is None or b.anomaly is None:
        return None
    da, db = a.anomaly.device, b.anomaly.device
    return {
        "files_a": da.files,
        "files_b": db.files,
        "auc_a": da.auc,
        "auc_b": db.auc,
        "top1_percent_a": da.top1_percent,
        "top1_percent_b": db.top1_percent,
    }


def compare_runs(a: Run, b: Run, latency_tolerance: float | None = None) -> Comparison:
    """Per subset accuracy deltas with McNemar's test on paired predictions; the latency median change
    with a bootstrap interval, significant only when the interval excludes zero and the change is larger
    than the tolerance (by default the figure's for the runs' latency sources: harness/results/judgeable.py)."""
    summary_a, summary_b = _eval_summary(a), _eval_summary(b)
    if (summary_a.anomaly is None) != (summary_b.anomaly is None):
        scored = a.id if summary_a.anomaly else b.id
        raise UserError(f"{scored} holds anomaly scores and the other run classes: compare runs of one task")
    paired = pair_accuracy(a, b, summary_a, summary_b)
    latency_a, unit_a = _latency_values(a)
    latency_b, unit_b = _latency_values(b)
    latency = {"unit": unit_a, "source_a": summary_a.latency.source, "source_b": summary_b.latency.source}
    figure = FIGURE_OF_COLUMN[unit_a]
    latency_tolerance = judgeable.tolerance(figure, (latency["source_a"], latency["source_b"]), latency_tolerance)
    if unit_a == unit_b and len(latency_a) and len(latency_b):
        change, low, high = bootstrap_median_change(latency_a, latency_b)
        latency |= {
            "median_a": float(np.median(latency_a)),
            "median_b": float(np.median(latency_b)),
            "relative_change": change,
            "ci95": [low, high],
            "tolerance": latency_tolerance,
            "significant": None
            if latency_tolerance is None
            else bool((low > 0 or high < 0) and abs(change) > latency_tolerance),
        }
        if latency_tolerance is None:
            first, second = latency["source_a"], latency["source_b"]
            source = first if judgeable.tolerance(figure, (first,)) is None else second
            latency["note"] = "not judged: " + judgeable.why_not_judged(figure, source, "pass --latency-tolerance")
        if latency["source_a"] != latency["source_b"]:
            latency |= {
                "significant": None,
                "note": f"not comparable: {latency['source_a']} against {latency['source_b']} latency",
            }
    else:
        latency |= {"significant": None, "note": f"not comparable: {unit_a} against {unit_b}"}
    arena_a, arena_b = summary_a.arena, summary_b.arena
    arena = {"source_a": arena_a.source, "source_b": arena_b.source, "used_delta": None}
    if not arena_a.used or not arena_b.used:
        arena["note"] = "not comparable: arena not reported by the DUT"
    elif arena_a.source != arena_b.source:
        arena["note"] = f"not comparable: {arena_a.source} against {arena_b.source} arena"
    else:
        arena["used_delta"] = arena_b.used - arena_a.used
    return Comparison(
        run_a=a.id,
        run_b=b.id,
        paired_samples=paired.samples,
        prediction_flips=paired.prediction_flips,
        subsets=paired.subsets,
        apart=paired.apart,
        anomaly=_anomaly_change(summary_a, summary_b),
        latency=latency,
        arena=arena,
        significant=any(s.significant for s in paired.subsets.values()) or bool(latency.get("significant")),
    )
