"""The run summary (summary.json): a run's figures, each with the label of its source. An eval run's
(`EvalSummary`: scores per subset, latency, arena, energy, ...) or a stream run's (`StreamSummary`: detections
on the board and on the host, scored against a ledger). Written and read with the manifest by
harness/results/record.py."""

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BeforeValidator, PlainSerializer

from harness.results.layer_trace import LayerTrace
from harness.results.op_profile import OperatorProfile
from harness.results.ranges import Count, Finite, Fraction, NonNegative, Percent
from harness.results.run_checks import Id, LinkCounters, PlainText, UniqueNames
from harness.results.schema import STRICT, Reported, Source
from harness.results.stream_scores import Detection, OptimalScore, StreamScores
from harness.results.task_facts import EARLIER_TASKS, TaskFacts

# ---------------------------------------------------------------- eval summary


@dataclass(frozen=True, kw_only=True)
class Stats:
    """A distribution's figures (hand-made and early records may hold only the median)."""

    min: NonNegative | None = None
    median: NonNegative
    p90: NonNegative | None = None
    max: NonNegative | None = None


@dataclass(frozen=True, kw_only=True)
class Latency:
    source: Source
    timer: str | None = None
    micros: Stats | None = None
    cycles: Stats | None = None
    instructions: Stats | None = None  # emulated boards: exact under QEMU -icount
    cpu_hz: Count | None = None


@dataclass(frozen=True, kw_only=True)
class Arena:
    source: Source
    configured: Reported = None
    used: Reported = None


@dataclass(frozen=True, kw_only=True)
class Score:
    """One source's scores on one subset (computed by harness/eval/metrics.py)."""

    n: Count = 0
    accuracy: Fraction | None = None
    accuracy_ci95: tuple[Fraction, Fraction] | None = None  # Wilson 95 %
    f1_wv: Fraction | None = None
    f1_counts: Fraction | None = None
    tp: Count | None = None
    fn: Count | None = None
    fp: Count | None = None
    tn: Count | None = None
    negatives: Count | None = None  # evaluated members of the negative pool
    pool_size: Count | None = None  # members of the negative pool in the whole dataset
    pool_incomplete: str | None = None  # "k of N" when only k of the pool's N members were evaluated
    f1_unavailable: str | None = None  # why f1_wv / f1_counts are None (an empty or incomplete pool, ...)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Versus:
    """The device against one host reference on one subset."""

    agreement: Fraction | None = None
    max_diff_steps: NonNegative | None = None


@dataclass(frozen=True, kw_only=True)
class SubsetResult:
    n: Count = 0
    positive_class: str | None = None
    device: Score = Score()
    host: dict[str, Score] = field(default_factory=dict)
    versus: dict[str, Versus] = field(default_factory=dict)
    pool_added: Count = 0  # samples the subset's negative pool added to the run (its F1's cost)


@dataclass(frozen=True, kw_only=True)
class References:
    used: UniqueNames = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Confusion:
    """Multi-class runs: the confusion matrix of the device and of each host reference (rows true, columns
    predicted). Stored flat, as earlier versions did: {"labels": [...], "device": [[...]], "tflm": [[...]]}."""

    labels: list[str]
    matrices: dict[str, list[list[Count]]]


def _nested_confusion(value):
    if isinstance(value, dict) and "matrices" not in value:
        return {"labels": value.get("labels", []), "matrices": {k: v for k, v in value.items() if k != "labels"}}
    return value


def _flat_confusion(value: Confusion | None):
    return None if value is None else {"labels": value.labels, **value.matrices}


StoredConfusion = Annotated[
    Confusion | None, BeforeValidator(_nested_confusion), PlainSerializer(_flat_confusion, when_used="always")
]


@dataclass(frozen=True, kw_only=True)
class AnomalyScore:
    """Anomaly detection over files, each scored by the mean of its windows (harness/eval/anomaly.py)."""

    files: Count = 0  # files scored: every window of theirs evaluated
    anomalous_files: Count = 0
    windows: Count = 0
    partial_files: Count = 0  # files left out: some of their windows not evaluated (--limit, unreadable)
    auc: Fraction | None = None  # None without both normal and anomalous files
    top1_percent: Percent | None = None  # the MLPerf Tiny runner's "Top 1%": its best (precision + recall) / 2


@dataclass(frozen=True, kw_only=True)
class Anomaly:
    """Anomaly-detection runs: the device's file-level figures and each host reference's."""

    device: AnomalyScore
    host: dict[str, AnomalyScore] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Unreadable:
    count: Count = 0
    first: list[tuple[str, str]] = field(default_factory=list)  # (sample id, why)


@dataclass(frozen=True, kw_only=True)
class PerInference:
    median: Finite | None = None
    p10: Finite | None = None
    p90: Finite | None = None
    mean: Finite | None = None


@dataclass(frozen=True, kw_only=True)
class Streaming:
    joules: Finite
    wh: Finite | None = None
    seconds: NonNegative | None = None


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """The windows against the meter's sample period (harness/energy/windows.py resolution)."""

    meter_period_s: NonNegative | None = None
    min_window_periods: Count | None = None
    shortest_window_s: NonNegative | None = None
    median_window_s: NonNegative | None = None
    windows_too_short: Count = 0
    windows: Count = 0
    statement: str | None = None  # set when some windows are too short: their energy is interpolated


@dataclass(frozen=True, kw_only=True)
class Energy:
    """A meter's figures for a run (harness/energy/windows.py energy_summary, harness/energy/metering.py)."""

    source: Source
    meter: str | None = None
    windows: str | None = None  # how inferences were windowed: host, device-timed, gpio
    inferences: Count | None = None
    uj_per_inference: PerInference = PerInference()
    mean_watts_in_windows: Finite | None = None
    resolution: Resolution | None = None  # absent in runs recorded before it was
    idle_watts: Finite | None = None
    idle_seconds: NonNegative | None = None
    total_j: Finite | None = None
    seconds: NonNegative | None = None
    streaming: Streaming | None = None  # first sample to last answer
    meter_spec: str | None = None


@dataclass(frozen=True, kw_only=True)
class BoardIdentity:
    """Who a board said it was at HELLO (harness/link/session.py Identity), as the device said it."""

    board_id: str
    firmware_build_id: str
    protocol_version: Count
    model_sha256_prefix: str  # empty where the protocol reports none (EEMBC DUTs)


@dataclass(frozen=True, kw_only=True)
class Retirement:
    """A board retired mid-run: at a connect after its first, it said other than its first HELLO (`said`; None:
    nothing answered as harness firmware). None of its samples after that connect counts."""

    expected: BoardIdentity
    said: BoardIdentity | None = None


@dataclass(frozen=True, kw_only=True)
class BoardShare:
    """One board's part of a run dealt over several (harness/device/sharding.py)."""

    name: str  # its port, USB serial number or labgrid place; `sim#2` for the second board harness started
    usb_serial_number: str | None = None  # a board on this machine's USB, whatever named it
    samples: Count = 0
    latency: Latency | None = None
    link: LinkCounters = field(default_factory=dict)
    failure: str | None = None  # why it stopped before the run ended (its unfinished samples went to the others)
    retired: Retirement | None = None  # it stopped because it was no longer the run's board (absent in older runs)


@dataclass(frozen=True, kw_only=True)
class EvalSummary:
    __pydantic_config__ = STRICT
    kind: Literal["eval"] = "eval"
    model: PlainText | None = None
    model_caveat: PlainText | None = None
    board: Id | None = None
    dataset: str | None = None
    synthetic: PlainText | None = None  # a made-up dataset (the demo sets): what it is, shown with every figure of it
    samples: Count = 0
    subsets: dict[PlainText, SubsetResult] = field(default_factory=dict)
    primary_reference: PlainText | None = None
    bit_exact: dict[str, Count] = field(default_factory=dict)  # per reference: samples with equal output bytes
    output_diff_unit: str | None = None
    latency: Latency
    arena: Arena
    references: References = References()
    task: str = "image_classification"
    task_facts: TaskFacts | None = None  # what the task declares (harness/eval/tasks.py); earlier runs: none
    confusion: StoredConfusion = None
    anomaly: Anomaly | None = None  # anomaly_detection: AUC and Top-1 over files
    run_id: Id | None = None
    link: LinkCounters = field(default_factory=dict)  # the link's counters (harness/link/client.py)
    unreadable_images: Unreadable = Unreadable()
    inputs_from_cache: bool | None = None
    energy: Energy | None = None
    boards: list[BoardShare] = field(default_factory=list)  # a run over several boards: each one's part
    profile: OperatorProfile | None = None  # `harness eval --profile`: the first sample timed operator by operator
    layer_traces: list[LayerTrace] = field(default_factory=list)  # `harness eval --trace-layers N`

    @property
    def facts(self) -> TaskFacts:
        """The task's facts as the run stored them, else (an earlier version's run) as its task had them."""
        return self.task_facts or EARLIER_TASKS[self.task]

    @property
    def first_subset(self) -> SubsetResult | None:
        return next(iter(self.subsets.values()), None)

    @property
    def dataset_label(self) -> str:
        """The dataset as every view names it: a made-up one says what it is."""
        name = self.dataset or "dataset not recorded"
        return f"{name}: {self.synthetic}" if self.synthetic else name


# ---------------------------------------------------------------- stream summary


@dataclass(frozen=True, kw_only=True)
class Audio:
    file: str
    duration_ms: Count
    sample_rate: Count


@dataclass(frozen=True, kw_only=True)
class StreamDetections:
    device: list[Detection] = field(default_factory=list)
    host: list[Detection] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Busy:
    """The pipeline's compute time over the whole stream: instructions (emulated) or seconds."""

    source: Source
    instructions: Count | None = None
    seconds: NonNegative | None = None
    real_time_factor: NonNegative | None = None


@dataclass(frozen=True, kw_only=True)
class SourcedBytes:
    source: Source
    bytes: Count | None = None


@dataclass(frozen=True, kw_only=True)
class StreamSummary:
    __pydantic_config__ = STRICT
    kind: Literal["stream"] = "stream"
    run_id: Id | None = None
    model: PlainText | None = None
    model_caveat: PlainText | None = None
    board: Id | None = None
    audio: Audio
    timing_reference: str | None = None  # which instant a detection's time stamps (harness/streaming/detections.py)
    settings: dict[str, Any] = field(default_factory=dict)  # the pipeline's, as the device got them
    feature_rows: Count = 0
    model_runs: Count = 0
    detections: StreamDetections = StreamDetections()
    device_equals_host: bool
    busy: Busy
    frontend_arena_used: SourcedBytes | None = None
    link: LinkCounters = field(default_factory=dict)
    scores: StreamScores | None = None

    @property
    def optimal(self) -> OptimalScore | None:
        found = self.scores.by_policy().get("optimal") if self.scores else None
        return found if isinstance(found, OptimalScore) else None


Summary = Annotated[EvalSummary | StreamSummary, pydantic.Discriminator("kind")]
