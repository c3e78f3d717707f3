"""`harness compare`: what changed between two runs, and whether it is more than chance."""

import numpy as np
from scipy.stats import binomtest

from harness.errors import UserError
from harness.results import judgeable
from harness.results.intervals import wilson_interval
from harness.results.record import EvalSummary, parse_summary
from harness.results.runs import Run

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
FIGURE_OF_COLUMN = {"instructions": "instructions", "microseconds": "micros"}  # samples.parquet column: figure


def mcnemar_exact(a_correct: np.ndarray, b_correct: np.ndarray) -> tuple[int, int, float]:
    """Discordant pairs (only A right, only B right) and the exact two-sided McNemar p-value."""
    only_a = int(np.sum(a_correct & ~b_correct))
    only_b = int(np.sum(~a_correct & b_correct))
    if only_a + only_b == 0:
        return only_a, only_b, 1.0
    return only_a, only_b, float(binomtest(only_a, only_a + only_b, 0.5).pvalue)


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


def _paired(a: Run, b: Run) -> tuple[dict[str, int], dict[str, int]]:
    a_index = {sid: i for i, sid in enumerate(a.samples["sample_id"])}
    b_index = {sid: i for i, sid in enumerate(b.samples["sample_id"])}
    common = [sid for sid in a_index if sid in b_index]
    if not common:
        raise UserError(f"runs {a.id} and {b.id} share no samples; compare runs on the same dataset")
    return {sid: a_index[sid] for sid in common}, {sid: b_index[sid] for sid in common}


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


def compare_runs(a: Run, b: Run, latency_tolerance: float | None = None) -> dict:
    """Per subset accuracy deltas with McNemar's test on paired predictions; the latency median change
    with a bootstrap interval, significant only when the interval excludes zero and the change is larger
    than the tolerance (by default the figure's for the runs' latency sources: harness/results/judgeable.py)."""
    summary_a, summary_b = _eval_summary(a), _eval_summary(b)
    if (summary_a.anomaly is None) != (summary_b.anomaly is None):
        scored = a.id if summary_a.anomaly else b.id
        raise UserError(f"{scored} holds anomaly scores and the other run classes: compare runs of one task")
    a_rows, b_rows = _paired(a, b)
    ids = list(a_rows)
    labels = np.array([a.samples["label"][a_rows[i]] for i in ids])
    labels = np.where(labels == -1, 1, labels)
    a_pred = np.array([a.samples["device_prediction"][a_rows[i]] for i in ids])
    b_pred = np.array([b.samples["device_prediction"][b_rows[i]] for i in ids])
    subsets = {}
    decided = summary_a.anomaly is None and summary_b.anomaly is None  # anomaly windows get no class
    for name in summary_a.subsets if decided else ():
        column = f"in_{name}"
        if name not in summary_b.subsets or column not in a.samples:
            continue
        members = np.array([a.samples[column][a_rows[i]] for i in ids], dtype=bool)
        a_ok, b_ok = (a_pred == labels)[members], (b_pred == labels)[members]
        only_a, only_b, p = mcnemar_exact(a_ok, b_ok)
        subsets[name] = {
            "n_paired": int(members.sum()),
            "accuracy_a": float(a_ok.mean()) if members.any() else None,
            "accuracy_b": float(b_ok.mean()) if members.any() else None,
            "accuracy_ci95_a": wilson_interval(int(a_ok.sum()), int(members.sum())),  # Wilson 95 %
            "accuracy_ci95_b": wilson_interval(int(b_ok.sum()), int(members.sum())),
            "delta": float(b_ok.mean() - a_ok.mean()) if members.any() else None,
            "only_a_correct": only_a,
            "only_b_correct": only_b,
            "mcnemar_p": p,
            "significant": p < ALPHA,
        }
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
    return {
        "run_a": a.id,
        "run_b": b.id,
        "paired_samples": len(ids),
        "prediction_flips": int(np.sum(a_pred != b_pred)),
        "subsets": subsets,
        "anomaly": _anomaly_change(summary_a, summary_b),
        "latency": latency,
        "arena_used_delta": arena["used_delta"],
        "arena": arena,
        "significant": any(s["significant"] for s in subsets.values()) or bool(latency.get("significant")),
    }
