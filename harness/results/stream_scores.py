"""What a stream run's scores are: the typed results of harness/streaming/scoring.py (detections scored
against an event ledger under a policy), kept in the run record (harness/results/record.py)."""

from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar

import pydantic

from harness.results.ranges import Count, Fraction, NonNegative


@dataclass(frozen=True)
class Detection:
    label: str
    time_ms: int
    score: float
    reference: str


@dataclass
class Outcome:
    kind: str  # hit, substitution, miss, duplicate, false_alarm
    event_label: str | None = None
    event_ms: int | None = None
    detection_label: str | None = None
    detection_ms: int | None = None
    score: float | None = None


@dataclass
class LabelRow:
    label: str
    events: int
    hits: int
    substitutions: int  # events of this label answered with another label
    misses: int
    detections: int
    wrong_label: int  # detections of this label on another label's event
    duplicates: int
    false_alarms: int
    recall: Fraction | None
    precision: Fraction | None


@dataclass
class Latency:
    timing_reference: str | None
    measured_from: str  # event end, event start, or event end where known
    count: int
    min_ms: float | None = None
    median_ms: float | None = None
    p90_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None
    values_ms: list[int] = field(default_factory=list)


@dataclass
class OptimalScore:
    policy: str
    tolerance_ms: int
    duration_ms: Count
    timing_reference: str | None
    events: Count
    detections: Count
    hits: Count
    misses: Count
    substitutions: Count
    duplicates: Count
    false_alarms: Count
    recall: Fraction | None  # hits / events
    precision: Fraction | None  # hits / detections
    false_alarms_per_hour: NonNegative | None
    unwanted_triggers: Count  # false alarms + duplicates + substitutions: every action nobody asked for
    unwanted_triggers_per_hour: NonNegative | None
    ignored_events: int  # _silence_/_unknown_ annotations: not commands
    ignored_detections: int  # _silence_/_unknown_ detections: no action follows
    per_label: list[LabelRow]
    latency: Latency
    outcomes: list[Outcome]

    COUNTS_AS: ClassVar[str] = "hits / misses / false alarms + duplicates + substitutions"

    def counts(self) -> dict[str, int]:
        """(correct, missed, unwanted) in this policy's own terms (COUNTS_AS), for the policies' plot."""
        return {"correct": self.hits, "missed": self.misses, "unwanted": self.unwanted_triggers}


@dataclass
class TfDetection:
    label: str
    time_ms: int
    score: float
    state: str  # Correct, Wrong, False Positive: the verbose tool's words
    ground_truth_label: str | None
    ground_truth_ms: int | None


@dataclass
class Convention:
    name: str
    description: str
    affected: int
    changed_numbers: bool


@dataclass
class TfCompatScore:
    policy: str
    tolerance_ms: int
    duration_ms: int
    timing_reference: str | None
    ground_truth: int
    matched: int  # entries in TF's matched list, repeats included
    correct: int
    wrong: int
    false_positives: int
    matched_percent: float | None
    correct_percent: float | None
    wrong_percent: float | None
    false_positive_percent: float | None  # over the number of annotations, not over time
    line: str  # exactly what print_accuracy_stats logs
    false_positives_per_hour: float | None  # the time-based rate TF does not print, over the declared exposure
    dropped_silence_detections: int
    per_detection: list[TfDetection]
    conventions: list[Convention]
    changed_by: list[str]  # the conventions that changed the numbers against optimal in this run
    caveats: list[str]
    skipped_lines: list[int] = field(default_factory=list)  # ledger lines TF's reader skips (not two fields)

    COUNTS_AS: ClassVar[str] = "correct / annotations not correct / wrong + false positives"

    def counts(self) -> dict[str, int]:
        return {
            "correct": self.correct,
            "missed": self.ground_truth - self.correct,
            "unwanted": self.wrong + self.false_positives,
        }


@dataclass
class MlperfSwwScore:
    policy: str
    wakeword: str | None
    after_end_ms: int
    debounce_ms: int
    duration_ms: int
    timing_reference: str | None
    wakewords: int
    true_positives: int
    false_negatives: int
    false_positives: int  # after the 1 s debounce
    false_detections_before_debounce: int
    ignored_detections: int  # other labels
    true_positive_ms: list[int]
    false_negative_ms: list[int]
    false_positive_ms: list[int]
    false_positives_per_hour: NonNegative | None
    line: str  # summarize_sww_result's count line
    caveats: list[str]

    COUNTS_AS: ClassVar[str] = "true positives / false negatives / false positives"

    def counts(self) -> dict[str, int]:
        return {"correct": self.true_positives, "missed": self.false_negatives, "unwanted": self.false_positives}


@dataclass(frozen=True, kw_only=True)
class NotScorable:
    """A policy the run's ledger cannot serve (mlperf-sww without end times), and why."""

    not_scorable: str


# policy name -> the type of its score: every registered policy (harness/streaming/policies/) adds its own.
SCORE_TYPES: dict[str, type] = {"optimal": OptimalScore, "tf-compat": TfCompatScore, "mlperf-sww": MlperfSwwScore}


def register_score_type(policy: str, score_type: type) -> None:
    SCORE_TYPES[policy] = score_type


def unregister_score_type(policy: str) -> None:
    SCORE_TYPES.pop(policy, None)


@cache
def _adapter(score_type: type) -> pydantic.TypeAdapter:
    return pydantic.TypeAdapter(score_type)


def _typed(policy: str, score):
    if isinstance(score, str):
        return NotScorable(not_scorable=score)
    if isinstance(score, dict) and set(score) == {"not_scorable"}:
        return NotScorable(**score)
    if policy not in SCORE_TYPES:
        raise ValueError(f"no scoring policy is named {policy!r} (known: {', '.join(SCORE_TYPES)})")
    return _adapter(SCORE_TYPES[policy]).validate_python(score)


EARLIER_NAMES = {"tf_compat": "tf-compat", "mlperf_sww": "mlperf-sww"}  # StreamScores' fields, one per policy


class StreamScores(pydantic.RootModel[dict[str, Any]]):
    """The device's detections scored under each policy (harness/streaming/scoring.py): policy name -> its
    score, or why the policy could not score this ledger (NotScorable)."""

    @pydantic.model_validator(mode="before")
    @classmethod
    def _by_policy(cls, data):
        """Each score read as its policy's type. Earlier versions kept one field per policy: their names
        (tf_compat, mlperf_sww) read as the policies they named, and a policy they left null as none."""
        if not isinstance(data, dict):
            return data
        named = {EARLIER_NAMES.get(policy, policy): score for policy, score in data.items() if score is not None}
        return {policy: _typed(policy, score) for policy, score in named.items()}

    @classmethod
    def of(cls, scores: dict) -> "StreamScores | None":
        """From {policy: score, or why the policy could not score this ledger}."""
        return cls(scores) if scores else None

    def by_policy(self) -> dict:
        return dict(self.root)
