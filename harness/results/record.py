"""The run record: what a run folder's manifest.json and summary.json hold, written and read here only.

A run is of one kind:
- `eval`: benchmark samples through a board and the host references, scored per subset (samples.parquet
  beside the record);
- `stream`: a WAV through the keyword pipeline on the board and on the host, its detections compared and
  scored against a ledger (detections_device.csv and detections_host.csv beside the record).

The manifest says where a run's figures come from (harness, host, board, firmware, model, data, settings);
the summary holds the figures. Every figure keeps the label of its source: `device` (a board's own counters),
`emulated` (QEMU instruction counts), `sim` (the virtual board or a simulated meter: this machine's time),
`host`, `estimated`.

The records are frozen dataclasses; pydantic turns them into the JSON on disk and back. Reading is lenient
about what is absent, so run folders of earlier versions (and hand-made ones) still load: a field they lack
takes its default, a key this version no longer reads is ignored, and `_upgraded` moves what earlier versions
kept elsewhere. It is strict about what is there: the files are read as harness/reading.py reads every file
(a regular file within its size, UTF-8, nesting and numbers bounded, no NaN), every field is of its type and
every figure in its range (harness/results/ranges.py); anything else makes the run damaged, named with its
file and field (`damaged`)."""

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import pydantic
from pydantic import AfterValidator, BeforeValidator, PlainSerializer

from harness import reading
from harness.errors import UserError
from harness.results.provenance import harness_source, host_machine, subset_content_hashes
from harness.results.ranges import Count, Finite, Fraction, NonNegative, Percent
from harness.results.run_checks import (
    Host,
    Id,
    LinkCounters,
    ManifestReferences,
    PlainText,
    Settings,
    Sha256,
    Timestamp,
    UniqueNames,
    eval_summary_problem,
    manifest_problem,
)
from harness.results.stream_scores import Detection, OptimalScore, StreamScores
from harness.results.task_facts import EARLIER_TASKS, TaskFacts
from harness.samples import CleanLabels

if TYPE_CHECKING:
    from harness.boards import Board
    from harness.link.protocol import DeviceInfo
    from harness.model.card import ModelCard
    from harness.model.tflite_file import TfliteModel
    from harness.samples import Dataset

MANIFEST, SUMMARY = "manifest.json", "summary.json"
Kind = Literal["eval", "stream"]
KINDS: tuple[Kind, ...] = ("eval", "stream")
# What a complete run folder of each kind holds beside its record.
TABLES: dict[str, tuple[str, ...]] = {
    "eval": ("samples.parquet",),
    "stream": ("detections_device.csv", "detections_host.csv"),
}
Source = Literal["device", "emulated", "sim", "host", "estimated"]
# 0 from a DUT means it did not report the figure (no model runs in an empty arena); older runs stored 0.
Reported = Annotated[Count | None, AfterValidator(lambda value: value or None)]
Hertz = Annotated[int, pydantic.Field(ge=1, strict=True)]
# The manifest and summary refuse a key they do not declare (a misspelt or foreign key is damage).
STRICT = pydantic.ConfigDict(extra="forbid")


# ---------------------------------------------------------------- manifest


@dataclass(frozen=True, kw_only=True)
class HarnessSource:
    version: str | None = None
    git_sha: str | None = None
    git_dirty: bool | None = None


@dataclass(frozen=True, kw_only=True)
class ModelProvenance:
    card: PlainText
    file: str | None = None
    sha256: Sha256 | None = None
    bytes: Count | None = None
    card_file: str | None = None
    input: str | None = None
    output: str | None = None
    converted_from: dict[str, Any] | None = None  # a float model converted on the fly (harness/model/convert.py)
    frontend: str | None = None  # stream runs: the audio frontend model beside the keyword model

    @classmethod
    def of(cls, card: "ModelCard", model: "TfliteModel", **more) -> "ModelProvenance":
        return cls(
            card=card.name,
            file=str(model.path),
            sha256=model.sha256,
            bytes=len(model.data),
            card_file=str(card.card_path),
            input=model.input.describe(),
            output=model.output.describe(),
            **more,
        )


@dataclass(frozen=True, kw_only=True)
class BoardProvenance:
    id: Id
    kind: str | None = None
    latency_source: Source | None = None
    usb_serial_number: str | None = None
    flash_bytes: Count | None = None
    ram_bytes: Count | None = None

    @classmethod
    def of(cls, board: "Board", usb_serial_number: str | None) -> "BoardProvenance":
        return cls(
            id=board.id,
            kind=board.kind,
            latency_source=board.latency_source,
            usb_serial_number=usb_serial_number,
            flash_bytes=board.memory.flash_bytes,
            ram_bytes=board.memory.ram_bytes,
        )


@dataclass(frozen=True, kw_only=True)
class FirmwareBuild:
    """How harness built the firmware a board runs (harness/firmware/build.py for QEMU boards, the
    `harness flash` record of harness/firmware/platformio.py for real ones)."""

    build_id: str | None = None
    kernels: str | None = None
    compiler: str | None = None
    flags: str | list[str] | None = None
    tflm: dict[str, Any] | None = None
    makefile: str | None = None
    platform: str | None = None
    framework: str | None = None
    project: str | None = None
    flash_bytes: Count | None = None
    static_ram_bytes: Count | None = None
    sections: dict[str, Count] | None = None


@dataclass(frozen=True, kw_only=True)
class Timer:
    kind: str
    hz: Hertz


@dataclass(frozen=True, kw_only=True)
class DeviceProvenance:
    """What the device said at HELLO, and how harness built its firmware (None when it did not)."""

    board_id: str | None = None
    firmware_build_id: str | None = None
    protocol_version: int | None = None
    model_sha256_prefix: str | None = None
    arena_configured: Reported = None
    arena_used: Reported = None
    cpu_hz: Count | None = None
    timer: Timer | None = None
    firmware: FirmwareBuild | None = None
    baud: Count | None = None  # the link's rate as the run used it, after any SET_BAUD (None: not recorded)

    @classmethod
    def of(cls, info: "DeviceInfo", firmware: dict | None, link: dict | None = None) -> "DeviceProvenance":
        """What HELLO said; with the run's link stats, the baud rate it ran at."""
        return cls(
            baud=(link or {}).get("baud") or None,
            board_id=info.board_id,
            firmware_build_id=info.build_id,
            protocol_version=info.protocol_version,
            model_sha256_prefix=info.model_sha256_prefix,
            arena_configured=info.arena_configured or None,
            arena_used=info.arena_used or None,
            cpu_hz=info.cpu_hz,
            timer=Timer(kind=info.tick_kind.name.lower(), hz=info.tick_hz),
            firmware=_parse(FirmwareBuild, firmware) if firmware else None,
        )


@dataclass(frozen=True, kw_only=True)
class DatasetProvenance:
    """Eval runs: the data, and per subset a hash of its members (equal hashes: the same samples)."""

    name: str | None = None
    labels: str | None = None
    labels_sha256: str | None = None
    subsets: list[PlainText] = field(default_factory=list)
    subset_content_sha256: dict[str, str] = field(default_factory=dict)
    limit: Count | None = None  # members per subset (order "dataset": samples in all)
    order: str | None = None  # "sampled": each subset's members drawn by `seed`; "dataset": the first ones
    seed: int | None = None
    order_seed: int | None = None  # --shuffle
    clean_labels: CleanLabels | None = None  # cleaned labels put over the flag CSVs' person label
    flag_contradictions: int | None = None  # the dataset's members of the subsets against their person label

    @classmethod
    def of(cls, dataset: "Dataset", subsets: list, samples: list, members=None, **drawn):
        """`samples`: the ones the run evaluated; `members`: each subset's ids among them it is scored on (by
        default its members); `drawn`: limit, order, seed, order_seed and flag_contradictions."""
        return cls(
            name=dataset.name,
            labels=str(dataset.csv_path),
            labels_sha256=dataset.csv_sha256,
            subsets=[s.name for s in subsets],
            subset_content_sha256=subset_content_hashes(samples, subsets, members),
            clean_labels=dataset.clean_labels,
            **drawn,
        )


@dataclass(frozen=True, kw_only=True)
class AudioProvenance:
    """Stream runs: the stream and the ledger its detections were scored against."""

    file: str
    sha256: str | None = None
    ledger: str | None = None
    ledger_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class MeterProvenance:
    spec: str | None = None
    identity: str | None = None
    source: Source | None = None

    @classmethod
    def of(cls, spec: str, trace) -> "MeterProvenance":
        """`trace`: the meter's power trace (harness/energy/trace.py)."""
        return cls(spec=spec, identity=trace.meter, source=trace.source)


@dataclass(frozen=True, kw_only=True)
class Manifest:
    __pydantic_config__ = STRICT
    run_id: Id
    kind: Kind = "eval"
    harness: HarnessSource | None = None
    started: Timestamp  # ISO 8601, as the run recorded it when it started
    finished: Timestamp | None = None
    settings: Settings = None  # the run's settings as given (eval: harness/eval/settings.py)
    model: ModelProvenance
    board: BoardProvenance
    device: DeviceProvenance = DeviceProvenance()
    dataset: DatasetProvenance | None = None  # eval runs
    audio: AudioProvenance | None = None  # stream runs
    references: ManifestReferences = None  # eval runs: name -> description, and "refused": name -> why
    host: Host = None  # harness/results/provenance.py host_machine()
    meter: MeterProvenance | None = None

    @classmethod
    def new(cls, **fields) -> "Manifest":
        """A manifest of a run on this machine, with this harness."""
        return cls(harness=_parse(HarnessSource, harness_source()), host=host_machine(), **fields)


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


# ---------------------------------------------------------------- the record and its files


@dataclass(frozen=True)
class RunRecord:
    manifest: Manifest
    summary: EvalSummary | StreamSummary

    @property
    def kind(self) -> Kind:
        return self.manifest.kind


_ADAPTERS: dict = {}


def _adapter(cls) -> pydantic.TypeAdapter:
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = pydantic.TypeAdapter(cls)
    return _ADAPTERS[cls]


def _parse(cls, data, where: str = "the run record"):
    if isinstance(cls, type) and isinstance(data, cls):
        return data
    try:
        return _adapter(cls).validate_python(data)
    except pydantic.ValidationError as exc:
        raise UserError(f"{where}: {field_problem(exc)}; it is not a run record harness can read") from None


def field_problem(exc: pydantic.ValidationError) -> str:
    """The first problem pydantic found, for a person: the field's dotted path, what it holds, what is wrong."""
    error = exc.errors()[0]
    # A union's member or a validator's name is no key of the file: leave them out of the path.
    *path, last = error["loc"] or ("",)
    unknown = error["type"] in ("unexpected_keyword_argument", "extra_forbidden")  # the key itself, whatever it is
    parts = [str(part) for part in path if not _internal(part)]
    parts += [str(last)] if unknown or not _internal(last) else []
    name = ".".join(parts) or "the top level"
    if error["type"] == "missing":
        return f"field {name!r} is missing"
    held = repr(error["input"])
    held = held if len(held) <= 40 else held[:37] + "..."
    said = error["msg"].removeprefix("Value error, ")
    return f"field {name!r} is {held}: {said[0].lower()}{said[1:]}"


def _internal(part) -> bool:
    return isinstance(part, str) and (part in KINDS or any(mark in part for mark in "[(") or part[:1].isupper())


def to_json(record) -> dict:
    """A manifest or summary (or any part of one) as the JSON it is stored as."""
    return _adapter(type(record)).dump_python(record, mode="json", by_alias=True)


def _kind(data: dict):
    return data.get("kind") or "eval"  # eval runs of earlier versions say no kind


def _upgraded(manifest: dict) -> dict:
    """Where earlier versions kept things: a stream run's firmware build id sat under board."""
    manifest = dict(manifest, kind=_kind(manifest))
    board = manifest.get("board")
    if isinstance(board, dict) and "firmware_build_id" in board and "device" not in manifest:
        manifest["device"] = {"firmware_build_id": board["firmware_build_id"]}
        manifest["board"] = {key: value for key, value in board.items() if key != "firmware_build_id"}
    return manifest


def parse_manifest(data: dict, where: str = MANIFEST) -> Manifest:
    return _parse(Manifest, _upgraded(data), where)


def parse_summary(data: dict, where: str = SUMMARY) -> EvalSummary | StreamSummary:
    return _parse(Summary, dict(data, kind=_kind(data)), where)


def parse(cls, data, where: str = "the run record"):
    """One part of a record from its stored JSON (a part already parsed is returned as it is)."""
    return _parse(cls, data, where)


# The kind of file (harness/reading.py: its name in messages, its size limit) of each JSON file of a run folder.
FILE_KINDS = {MANIFEST: reading.MANIFEST, SUMMARY: reading.SUMMARY, "request.json": reading.REQUEST}


def kind_of(path: Path):
    """The kind a folder's manifest names, as stored (None: no readable manifest)."""
    try:
        return _kind(reading.read_json(path / MANIFEST, reading.MANIFEST))
    except (UserError, AttributeError):
        return None


DAMAGED_FIX = "restore the file or remove the run folder; `harness runs` lists the runs it can read"


def damaged(spec, name: str, why: str) -> UserError:
    """The one line naming a run folder's damaged file and why."""
    return UserError(f"{spec}: {name} is damaged: {why}; {DAMAGED_FIX}")


def read_json(path: Path, spec: str | Path) -> dict:
    """A run folder's JSON object `path` (the folder named `spec`, as the user knows it), read as
    harness/reading.py reads every file (a regular file, within its size, UTF-8, nesting and numbers bounded);
    a damaged one is refused in one line naming the file and why."""
    kind = FILE_KINDS.get(path.name, reading.JSON_STREAM)
    try:
        text = reading.read_text(path, kind)
    except UserError as exc:
        raise damaged(spec, path.name, reading_problem(exc, kind, path)) from None
    if not text.strip():
        raise damaged(spec, path.name, "it is empty")
    try:
        data = reading.parse_json(text, kind, path)
    except UserError as exc:
        raise damaged(spec, path.name, reading_problem(exc, kind, path)) from None
    if not isinstance(data, dict):
        raise damaged(spec, path.name, f"it is a JSON {_json_type(data)}, not an object")
    return data


def reading_problem(exc: UserError, kind: reading.FileKind, path: Path) -> str:
    """What harness/reading.py found wrong with the file, without its own naming of the file (a run's file is
    named by its folder and name) nor its "name a file" (the fix is the run's: restore it)."""
    said, prefix = str(exc), f"{kind.name} {path} "
    if not said.startswith(prefix):
        return said
    return "it " + said.removeprefix(prefix).replace("; name a file", "")


def _json_type(data) -> str:
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(data), type(data).__name__)


def read_files(path: Path, spec: str | None = None) -> tuple[dict, dict]:
    """The stored manifest and summary of the run folder `path` (named `spec` on the command line)."""
    spec = spec or path
    missing = [name for name in (MANIFEST, SUMMARY) if not os.path.lexists(path / name)]
    if missing:
        raise UserError(
            f"{spec} is not a run folder (needs {MANIFEST} and {SUMMARY}; {' and '.join(missing)} missing); "
            "see `harness runs`"
        )
    return read_json(path / MANIFEST, spec), read_json(path / SUMMARY, spec)


def record_of(manifest: dict, summary: dict, where: Path | str = "") -> RunRecord:
    """The typed record of a run folder's stored manifest and summary (`where`: the folder, for messages):
    every field of its type and every figure in its range (harness/results/ranges.py), else the run is
    damaged, named with its file and field."""
    where = where or "the run"
    for name, data in ((MANIFEST, manifest), (SUMMARY, summary)):
        if not isinstance(data, dict):
            raise damaged(where, name, f"it is a JSON {_json_type(data)}, not an object")
        if not isinstance(_kind(data), str):
            raise damaged(where, name, f"field 'kind' is {_kind(data)!r}, not a kind of run (eval or stream)")
    if _kind(manifest) not in KINDS:
        raise UserError(f"{where} is a {_kind(manifest)} run, not an eval or stream run")
    record = RunRecord(
        _checked(Manifest, _upgraded(manifest), where, MANIFEST),
        _checked(Summary, dict(summary, kind=_kind(summary)), where, SUMMARY),
    )
    if record.summary.kind != record.manifest.kind:
        raise damaged(
            where, SUMMARY, f"it is of a {record.summary.kind} run, its {MANIFEST} of a {record.manifest.kind} run"
        )
    _check_agreement(record, where)
    return record


def _check_agreement(record: RunRecord, where) -> None:
    """The record's figures agree with each other and with its folder (harness/results/run_checks.py)."""
    folder_name = where.name if isinstance(where, Path) else None
    problem = manifest_problem(record.manifest, folder_name)
    if problem:
        raise damaged(where, MANIFEST, problem)
    summary = record.summary
    if summary.run_id is not None and summary.run_id != record.manifest.run_id:
        raise damaged(where, SUMMARY, f"field 'run_id' is {summary.run_id!r}, its {MANIFEST} says otherwise")
    if isinstance(summary, EvalSummary):
        problem = eval_summary_problem(summary, finished=record.manifest.finished is not None)
        if problem:
            raise damaged(where, SUMMARY, problem)


def _checked(schema, data: dict, where, name: str):
    try:
        return _adapter(schema).validate_python(data)
    except pydantic.ValidationError as exc:
        raise damaged(where, name, field_problem(exc)) from None


def write_record(folder, record: RunRecord) -> None:
    """The record into a run folder being written (harness/results/store.py RunFolder)."""
    folder.write_json(MANIFEST, to_json(record.manifest))
    folder.write_json(SUMMARY, to_json(record.summary))
