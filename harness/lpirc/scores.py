"""LPIRC scores over a set of runs: accuracy (mAP for detection) ÷ energy in Wh, and the prizes.

Only runs with energy above zero are ranked (the others are listed under `no_energy`). Over those runs,
with mean and population standard deviation sd:
- champion, second and third: ranked by accuracy ÷ energy;
- least energy among runs whose accuracy is at least mean + 1 sd;
- best accuracy among runs whose energy is at most mean - 1 sd.
As the LPIRC rules say, a tie gives several winners: each prize is a list of run ids, and tied runs
share a place, the next place counting the runs ahead (two champions, no second, then a third).
With a time limit only results received within it count (samples not answered in time are wrong, as
LPIRC's mAP counted unanswered objects as missed) and energy is what the meter measured up to it.
Without one, an eval run's energy is its streaming energy (first sample to last answer) and a referee
session's the whole metered session (login to logout or the time limit).
"""

import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pyarrow.parquet as pq
import pydantic

from harness.energy.trace import JOULES_PER_WH
from harness.errors import UserError, setting
from harness.eval.detection import mean_average_precision, read_boxes
from harness.lpirc.referee import answers_correct
from harness.reading import DETECTIONS, KIB, MAP_TRUTH, REFEREE_LABELS, SUMMARY, read_json, validate
from harness.results.runs import checked_spec
from harness.results.schema import parse
from harness.results.summary import Energy, Streaming, SubsetResult

_FIGURES = pydantic.ConfigDict(extra="ignore", allow_inf_nan=False, frozen=True)  # the figures a score reads
Fraction = Annotated[float, pydantic.Field(ge=0, le=1)]


class _Map(pydantic.BaseModel):
    model_config = _FIGURES
    map: Fraction


class _Accuracy(pydantic.BaseModel):
    model_config = _FIGURES
    value: Fraction


class _RefereeEnergy(pydantic.BaseModel):
    model_config = _FIGURES
    source: Annotated[str, pydantic.StringConstraints(min_length=1, max_length=1 * KIB)]


class RefereeSummary(pydantic.BaseModel):
    """The parts of a referee session's summary.json a score reads, typed and in range."""

    model_config = _FIGURES
    kind: Literal["referee"]
    metric: Literal["map", "accuracy"]
    map: _Map | None = None
    accuracy: _Accuracy | None = None
    energy: _RefereeEnergy | None = None

    @pydantic.model_validator(mode="after")
    def _has_its_metric(self) -> "RefereeSummary":
        if getattr(self, self.metric) is None:
            raise ValueError(f"its metric is {self.metric} but it has no {self.metric} figures")
        return self

    @property
    def accuracy_value(self) -> float:
        return self.map.map if self.metric == "map" else self.accuracy.value


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
    checked_spec(spec)
    for candidate in [Path(spec), *(root / spec for root in roots)]:
        if os.path.lexists(candidate / "summary.json"):  # not is_file(): a FIFO there is refused by its reader
            return candidate
    raise UserError(f"{spec} is not a run folder or run id under {', '.join(map(str, roots))}; see `harness runs`")


def _trace_energy_j(path: Path, end: float | None) -> float | None:
    """Joules from t = 0 (streaming start or login) to `end` (default: the trace's end), from the stored trace."""
    if not (path / "power.parquet").is_file():
        return None
    table = pq.read_table(path / "power.parquet").to_pydict()
    t, energy = np.array(table["t"]), np.array(table["energy_j"])
    end = t[-1] if end is None else min(end, t[-1])
    return float(np.interp(end, t, energy) - np.interp(max(0.0, t[0]), t, energy))


def _energy_to(path: Path, streaming: Streaming | None, limit: float | None) -> float | None:
    """Joules up to `limit`: from the eval's streaming figure (first sample to last answer) when there is one."""
    if streaming is None:
        return _trace_energy_j(path, limit)
    if limit is None:
        return streaming.joules
    return _trace_energy_j(
        path, min(limit, streaming.seconds)
    )  # the meter's tail after the last answer is not the run's


def _eval_accuracy(path: Path, subsets: dict[str, SubsetResult], subset: str | None, limit: float | None) -> float:
    from harness.eval.subsets import SUBSETS
    from harness.samples import Sample

    name = subset or next(iter(subsets))
    if name not in subsets:
        raise UserError(f"run {path.name} has no subset {name}; it has {', '.join(subsets)}")
    if limit is None:
        return subsets[name].device.accuracy or 0.0
    columns = [f"in_{name}", "label", "device_prediction"]  # the columns it needs, not the output bytes
    samples = pq.read_table(path / "samples.parquet", columns=columns).to_pydict()
    received = np.array(pq.read_table(path / "energy.parquet").to_pydict()["received_s"])
    members = np.array(samples[f"in_{name}"], dtype=bool)
    labels = samples["label"]
    if name in SUBSETS:  # e.g. distance_far counts far-only images (-1) as persons
        labels = [SUBSETS[name].label(Sample("", Path(), {"person": label})) for label in labels]
    labels = np.array(labels)
    correct = members & (np.array(samples["device_prediction"]) == labels) & (received <= limit)
    return float(correct.sum() / members.sum()) if members.any() else 0.0


def _referee_accuracy(path: Path, summary: RefereeSummary, limit: float | None) -> float:
    if limit is None:
        return summary.accuracy_value
    seconds = np.array(pq.read_table(path / "received.parquet").to_pydict()["seconds"])
    rows = read_boxes(path / "results.csv", DETECTIONS) if seconds.size else []
    in_time = [box for box, t in zip(rows, seconds, strict=True) if t <= limit]
    if summary.metric == "map":
        return mean_average_precision(in_time, read_boxes(path / "truth.csv", MAP_TRUTH)).map
    labels = validate(read_json(path / "labels.json", REFEREE_LABELS), list[int], REFEREE_LABELS, path / "labels.json")
    return answers_correct(in_time, labels) / len(labels) if labels else 0.0


def score_run(path: Path, subset: str | None = None, limit: float | None = None) -> RunScore:
    """An eval run (read through the run record) or a referee session (its own summary), scored per Wh."""
    stored = read_json(path / "summary.json", SUMMARY)
    if not isinstance(stored, dict):
        raise UserError(
            f"run summary {path / 'summary.json'} holds a {type(stored).__name__}, not an object; "
            "restore the file or remove the run folder"
        )
    referee = stored.get("kind") == "referee"
    where = f"{path.name}/summary.json"
    if referee:
        session = validate(stored, RefereeSummary, SUMMARY, path / "summary.json")
        energy = session.energy
    elif energy := stored.get("energy"):  # an eval run: the parts of its record a score needs, typed
        energy = parse(Energy, energy, where)
    if not energy:
        raise UserError(f"run {path.name} has no energy figures: run it with {setting('meter')} KIND:ADDRESS")
    joules = _energy_to(path, None if referee else energy.streaming, limit)
    if joules is None:
        raise UserError(f"run {path.name} has no power.parquet to take energy from")
    if referee:
        kind, metric, source = "referee", session.metric, energy.source
        accuracy = _referee_accuracy(path, session, limit)
    else:
        kind, metric, source = "eval", "accuracy", energy.source
        subsets = {name: parse(SubsetResult, result, where) for name, result in stored.get("subsets", {}).items()}
        accuracy = _eval_accuracy(path, subsets, subset, limit)
    wh = joules / JOULES_PER_WH
    return RunScore(path.name, kind, metric, accuracy, wh, source, accuracy / wh if has_energy(wh) else None)


def has_energy(wh: float) -> bool:
    return math.isfinite(wh) and wh > 0


PLACES = ("champion", "second", "third")


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)


def _all_best(runs: list[RunScore], value, best=max) -> list[str]:
    """Every run whose value equals the best one: a tie gives several winners."""
    if not runs:
        return []
    top = best(value(r) for r in runs)
    return [r.run_id for r in runs if _same(value(r), top)]


def ranking(runs: list[RunScore]) -> dict[str, list[str]]:
    """Champion, second and third by score; tied runs share a place and the next place counts the runs ahead."""
    ordered = sorted(runs, key=lambda r: -r.score)
    places: dict[str, list[str]] = {place: [] for place in PLACES}
    position = 0
    while position < len(ordered) and position < len(PLACES):
        group = [r for r in ordered[position:] if _same(r.score, ordered[position].score)]
        places[PLACES[position]] = [r.run_id for r in group]
        position += len(group)
    return places


def prize_categories(scores: list[RunScore]) -> dict:
    rated = [s for s in scores if has_energy(s.wh)]
    no_energy = [s.run_id for s in scores if not has_energy(s.wh)]
    if not rated:
        empty = {place: [] for place in PLACES}
        return empty | {
            "least_energy_accurate": [],
            "best_accuracy_frugal": [],
            "accuracy_at_least": None,
            "wh_at_most": None,
            "no_energy": no_energy,
        }
    accuracy = np.array([s.accuracy for s in rated])
    energy = np.array([s.wh for s in rated])
    accuracy_bar = float(accuracy.mean() + accuracy.std())
    energy_bar = float(energy.mean() - energy.std())
    accurate = [s for s in rated if s.accuracy >= accuracy_bar - 1e-12]
    frugal = [s for s in rated if s.wh <= energy_bar + 1e-12]
    return ranking(rated) | {
        "least_energy_accurate": _all_best(accurate, lambda s: s.wh, min),
        "best_accuracy_frugal": _all_best(frugal, lambda s: s.accuracy),
        "accuracy_at_least": accuracy_bar,
        "wh_at_most": energy_bar,
        "no_energy": no_energy,
    }


def lpirc_scores(
    specs: list[str], roots: list[Path], subset: str | None, limit: float | None, allow_mixed_sources: bool = False
) -> dict:
    scores = [score_run(find_run(spec, roots), subset, limit) for spec in specs]
    metrics = {s.metric for s in scores}
    if len(metrics) > 1:
        raise UserError("the runs mix mAP and accuracy; score detection and classification runs separately")
    sources = sorted({s.energy_source for s in scores})
    if len(sources) > 1 and not allow_mixed_sources:
        raise UserError(
            f"the runs' energy comes from different sources ({', '.join(sources)}); score each source "
            f"separately or add {setting('allow_mixed_sources')}"
        )
    return {
        "time_limit_s": limit,
        "energy_sources": sources,
        "runs": [asdict(s) for s in scores],
        "prizes": prize_categories(scores),
    }
