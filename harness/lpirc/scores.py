"""LPIRC scores over a set of runs: accuracy (mAP for detection) ÷ energy in Wh, and the prize categories.

Categories, with mean and standard deviation sd (population) over the runs given:
- best score: the highest accuracy ÷ energy;
- least energy among runs whose accuracy is at least mean + 1 sd;
- best accuracy among runs whose energy is at most mean - 1 sd.
With a time limit only results received within it count (samples not answered in time are wrong, as
LPIRC's mAP counted unanswered objects as missed) and energy is what the meter measured up to it.
"""

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from harness.energy.trace import JOULES_PER_WH
from harness.errors import UserError
from harness.eval.detection import mean_average_precision, read_boxes


@dataclass(frozen=True)
class RunScore:
    run_id: str
    kind: str  # eval | referee
    metric: str  # accuracy | map
    accuracy: float
    wh: float
    energy_source: str
    score: float | None


def find_run(spec: str, roots: list[Path]) -> Path:
    for candidate in [Path(spec), *(root / spec for root in roots)]:
        if (candidate / "summary.json").is_file():
            return candidate
    raise UserError(f"{spec} is not a run folder or run id under {', '.join(map(str, roots))}; see `harness runs`")


def _energy_to(path: Path, limit: float | None) -> float | None:
    """Joules from t = 0 (streaming start or login) to the limit, from the stored trace."""
    if not (path / "power.parquet").is_file():
        return None
    table = pq.read_table(path / "power.parquet").to_pydict()
    t, energy = np.array(table["t"]), np.array(table["energy_j"])
    end = t[-1] if limit is None else min(limit, t[-1])
    return float(np.interp(end, t, energy) - np.interp(max(0.0, t[0]), t, energy))


def _eval_accuracy(path: Path, summary: dict, subset: str | None, limit: float | None) -> float:
    from harness.eval.subsets import SUBSETS

    name = subset or next(iter(summary["subsets"]))
    if name not in summary["subsets"]:
        raise UserError(f"run {path.name} has no subset {name}; it has {', '.join(summary['subsets'])}")
    if limit is None:
        return summary["subsets"][name]["device"]["accuracy"] or 0.0
    samples = pq.read_table(path / "samples.parquet").to_pydict()
    received = np.array(pq.read_table(path / "energy.parquet").to_pydict()["received_s"])
    members = np.array(samples[f"in_{name}"], dtype=bool)
    far = SUBSETS[name].flag == "far" if name in SUBSETS else False
    labels = np.array([1 if far and label == -1 else label for label in samples["label"]])
    correct = members & (np.array(samples["device_prediction"]) == labels) & (received <= limit)
    return float(correct.sum() / members.sum()) if members.any() else 0.0


def _referee_accuracy(path: Path, summary: dict, limit: float | None) -> float:
    if limit is None:
        return summary["map"]["map"] if summary["metric"] == "map" else summary["accuracy"]["value"]
    seconds = np.array(pq.read_table(path / "received.parquet").to_pydict()["seconds"])
    rows = read_boxes(path / "results.csv") if seconds.size else []
    in_time = [box for box, t in zip(rows, seconds, strict=True) if t <= limit]
    if summary["metric"] == "map":
        return mean_average_precision(in_time, read_boxes(path / "truth.csv")).map
    labels = json.loads((path / "labels.json").read_text())
    best: dict[int, tuple[float, int]] = {}
    for box in in_time:
        if box.image not in best or box.confidence > best[box.image][0]:
            best[box.image] = (box.confidence, box.label)
    correct = sum(1 for n, label in enumerate(labels, 1) if n in best and best[n][1] == label)
    return correct / len(labels) if labels else 0.0


def score_run(path: Path, subset: str | None = None, limit: float | None = None) -> RunScore:
    summary = json.loads((path / "summary.json").read_text())
    kind = summary.get("kind", "eval")
    energy = summary.get("energy")
    if not energy:
        raise UserError(f"run {path.name} has no energy figures: run it with --meter KIND:ADDRESS")
    joules = _energy_to(path, limit)
    if joules is None:
        raise UserError(f"run {path.name} has no power.parquet to take energy from")
    if kind == "referee":
        accuracy, metric = _referee_accuracy(path, summary, limit), summary["metric"]
    else:
        accuracy, metric = _eval_accuracy(path, summary, subset, limit), "accuracy"
    wh = joules / JOULES_PER_WH
    return RunScore(path.name, kind, metric, accuracy, wh, energy["source"], accuracy / wh if wh > 0 else None)


def prize_categories(scores: list[RunScore]) -> dict:
    accuracy = np.array([s.accuracy for s in scores])
    energy = np.array([s.wh for s in scores])
    accuracy_bar = float(accuracy.mean() + accuracy.std())
    energy_bar = float(energy.mean() - energy.std())
    scored = [s for s in scores if s.score is not None]
    accurate = [s for s in scores if s.accuracy >= accuracy_bar - 1e-12]
    frugal = [s for s in scores if s.wh <= energy_bar + 1e-12]
    return {
        "best_score": max(scored, key=lambda s: s.score).run_id if scored else None,
        "least_energy_accurate": min(accurate, key=lambda s: s.wh).run_id if accurate else None,
        "best_accuracy_frugal": max(frugal, key=lambda s: s.accuracy).run_id if frugal else None,
        "accuracy_at_least": accuracy_bar,
        "wh_at_most": energy_bar,
    }


def lpirc_scores(specs: list[str], roots: list[Path], subset: str | None, limit: float | None) -> dict:
    scores = [score_run(find_run(spec, roots), subset, limit) for spec in specs]
    metrics = {s.metric for s in scores}
    if len(metrics) > 1:
        raise UserError("the runs mix mAP and accuracy; score detection and classification runs separately")
    return {
        "time_limit_s": limit,
        "energy_sources": sorted({s.energy_source for s in scores}),
        "runs": [asdict(s) for s in scores],
        "prizes": prize_categories(scores),
    }
