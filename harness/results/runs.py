"""Reading run folders back: one run, or every run under a results folder, eval and stream runs alike."""

import math
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness import reading
from harness.errors import UserError, setting
from harness.results.record import (
    DAMAGED_FIX,
    MANIFEST,
    SUMMARY,
    TABLES,
    RunRecord,
    damaged,
    kind_of,
    read_files,
    reading_problem,
    record_of,
)
from harness.results.run_checks import has_control
from harness.results.sample_checks import classes_of, columns_to_check, rows_problem
from harness.results.summary import EvalSummary, StreamSummary


@dataclass(frozen=True)
class Run:
    path: Path
    manifest: dict  # as stored; read it through `record`
    summary: dict

    @cached_property
    def record(self) -> RunRecord:
        return record_of(self.manifest, self.summary, self.path)

    @property
    def kind(self) -> str:
        return self.record.kind

    @property
    def id(self) -> str:
        return self.record.manifest.run_id

    @property
    def model(self) -> str:
        return self.record.manifest.model.card

    @property
    def board(self) -> str:
        return self.record.manifest.board.id

    @property
    def primary_reference(self) -> str | None:
        summary = self.record.summary
        return summary.primary_reference if isinstance(summary, EvalSummary) else None

    @property
    def eval_summary(self) -> EvalSummary:
        """The summary of an eval run (a stream run is refused in one line)."""
        summary = self.record.summary
        if not isinstance(summary, EvalSummary):
            raise UserError(f"{self.id} is a stream run; this needs an eval run")
        return summary

    @property
    def stream_summary(self) -> StreamSummary:
        summary = self.record.summary
        if not isinstance(summary, StreamSummary):
            raise UserError(f"{self.id} is an eval run; this needs a stream run")
        return summary

    @cached_property
    def samples(self) -> "SampleColumns":
        """An eval run's samples.parquet, a column at a time: `run.samples["label"]` reads that column only."""
        return SampleColumns(self.path / SAMPLES, self.id)


SAMPLES = "samples.parquet"


MEASURES = ("microseconds", "instructions", "cycles", "ticks")  # per-sample latency figures of samples.parquet


class SampleColumns:
    """The columns of a samples.parquet, each read when first asked for (and kept): a report or compare
    of a run of any size reads the few columns it uses, never the output bytes it does not."""

    def __init__(self, path: Path, run_id: str):
        self._path, self._run_id = path, run_id
        self._read: dict[str, list] = {}
        self._names: list[str] | None = None

    @property
    def names(self) -> list[str]:
        if self._names is None:
            self._names = self._guarded(lambda handle: pq.read_schema(handle).names)
        return self._names

    def _guarded(self, read):
        """read(handle) on the table, opened as harness/reading.py opens every file it reads."""
        try:
            with reading.open_binary(self._path, reading.SAMPLES) as handle:
                return read(handle)
        except (pa.ArrowException, OSError) as exc:
            raise UserError(_damaged_table(self._run_id, SAMPLES, exc)) from None

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def __getitem__(self, name: str) -> list:
        if name not in self._read:
            if name not in self.names:
                raise KeyError(name)
            values = self._guarded(
                lambda handle: (
                    pq.read_table(handle, columns=[name], **reading.PARQUET_ON_THIS_THREAD).column(0).to_pylist()
                )
            )
            self._check(name, values)
            self._read[name] = values
        return self._read[name]

    def _check(self, name: str, values: list) -> None:
        """A column's values as compare and the report use them: sample ids once each, measures finite and >= 0."""
        if name == "sample_id":
            seen = set()
            for sample_id in values:
                if sample_id in seen:
                    raise damaged(self._run_id, SAMPLES, f"sample_id {sample_id!r} appears twice")
                seen.add(sample_id)
        if name in MEASURES:
            for row, value in enumerate(values, 1):
                if value is not None and not (math.isfinite(value) and value >= 0):
                    why = f"column {name!r} holds {value!r} in row {row}; a measure is a finite number of at least 0"
                    raise damaged(self._run_id, SAMPLES, why)

    def get(self, name: str, default=None):
        if name not in self.names:
            return default
        return self[name]


def _damaged_table(spec, name: str, exc: Exception) -> str:
    why = str(exc).split("\n")[0].split(". ")[0]
    if "magic bytes" in why or "size is 0" in why or "out of bounds" in why.lower():
        why = "not a Parquet file, or cut short"
    return f"{spec}: {name} is damaged ({why}); {DAMAGED_FIX}"


def _check_tables(run: Run, spec) -> None:
    """The tables beside the record are there and readable (their footer and schema; rows are read when
    used). A damaged table is refused in one line naming the run, the file and, for a column, the column."""
    missing = ", ".join(t for t in TABLES[run.kind] if not os.path.lexists(run.path / t))
    if missing:
        raise UserError(f"{spec} has no {missing}; it is not a complete run folder")
    for table in TABLES[run.kind]:  # a FIFO, a device or a folder is refused without blocking
        kind = reading.SAMPLES if table == SAMPLES else reading.DETECTIONS
        try:
            reading.check_regular(run.path / table, kind)
        except UserError as exc:
            raise damaged(spec, table, reading_problem(exc, kind, run.path / table)) from None
    if run.kind == "eval":
        _check_samples(run, spec)


def _is_number(column_type: pa.DataType) -> bool:
    # A column of a run whose board gave no such figure (QEMU boards give no microseconds) holds nulls only.
    return pa.types.is_floating(column_type) or pa.types.is_integer(column_type) or pa.types.is_null(column_type)


TEXT = (pa.types.is_string, "text")
WHOLE = (pa.types.is_integer, "whole numbers")
NUMBERS = (_is_number, "numbers")
# The columns every eval run's samples.parquet holds, read by compare, report and check, and their types;
# each host reference adds its predictions.
SAMPLE_COLUMNS = {"sample_id": TEXT, "label": WHOLE, "device_prediction": WHOLE, "microseconds": NUMBERS}


def _check_samples(run: Run, spec) -> None:
    """samples.parquet is a table of this run: its columns and their types, and rows when the run has samples."""
    try:
        with reading.open_binary(run.path / SAMPLES, reading.SAMPLES) as handle:
            table = pq.ParquetFile(handle)
            schema, rows = table.schema_arrow, table.metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise UserError(_damaged_table(spec, SAMPLES, exc)) from None
    summary = run.eval_summary
    wanted = SAMPLE_COLUMNS | {f"{name}_prediction": WHOLE for name in summary.references.used}
    for column, (is_type, type_name) in wanted.items():
        if column not in schema.names:
            raise damaged(spec, SAMPLES, f"it has no column {column!r}; it is not the samples table of this run")
        if not is_type(schema.field(column).type):
            held = schema.field(column).type
            raise damaged(spec, SAMPLES, f"column {column!r} holds {held}, not {type_name}")
    if rows == 0 and summary.samples:
        raise damaged(spec, SAMPLES, f"it has no rows, and {SUMMARY} counts {summary.samples} samples")
    scored = max((subset.n for subset in summary.subsets.values()), default=0)
    if rows < scored:
        raise damaged(spec, SAMPLES, f"it has {rows} rows, and {SUMMARY} scores a subset of {scored} samples")
    _check_rows(run, spec, schema.names)


def _check_rows(run: Run, spec, names: list[str]) -> None:
    """The rows' values (harness/results/sample_checks.py), reading only the columns checked."""
    try:
        with reading.open_binary(run.path / SAMPLES, reading.SAMPLES) as handle:
            table = pq.read_table(handle, columns=columns_to_check(names), **reading.PARQUET_ON_THIS_THREAD)
    except (pa.ArrowException, OSError) as exc:
        raise UserError(_damaged_table(spec, SAMPLES, exc)) from None
    classes = classes_of(run.eval_summary, run.record.manifest.model.output)
    problem = rows_problem(table, classes)
    if problem:
        raise damaged(spec, SAMPLES, problem)


@dataclass(frozen=True)
class EvalHeadline:
    """The figures `harness runs` lists for an eval run."""

    run_id: str
    kind: str
    model: str
    board: str
    samples: int
    subsets: str
    device_accuracy: float | None  # on the first subset
    device_accuracy_ci95: tuple[float, float] | None  # its Wilson 95 % interval
    agreement: float | None  # with the primary host reference, on the first subset
    latency_median_us: float | None
    instructions_median: float | None
    latency_source: str
    arena_used: int | None
    arena_source: str
    started: str


@dataclass(frozen=True)
class StreamHeadline:
    """The figures `harness runs` lists for a stream run (scores: the optimal policy's, with a ledger)."""

    run_id: str
    kind: str
    model: str
    board: str
    audio_ms: int
    detections: int
    device_equals_host: bool
    events: int | None
    hits: int | None
    false_alarms: int | None
    recall: float | None
    false_alarms_per_hour: float | None
    pipeline_seconds: float | None
    pipeline_instructions: int | None
    pipeline_source: str
    started: str


def headline(run: Run) -> EvalHeadline | StreamHeadline:
    manifest, summary = run.record.manifest, run.record.summary
    if isinstance(summary, StreamSummary):
        optimal = summary.optimal
        return StreamHeadline(
            run_id=run.id,
            kind=run.kind,
            model=run.model,
            board=run.board,
            audio_ms=summary.audio.duration_ms,
            detections=len(summary.detections.device),
            device_equals_host=summary.device_equals_host,
            events=optimal.events if optimal else None,
            hits=optimal.hits if optimal else None,
            false_alarms=optimal.false_alarms if optimal else None,
            recall=optimal.recall if optimal else None,
            false_alarms_per_hour=optimal.false_alarms_per_hour if optimal else None,
            pipeline_seconds=summary.busy.seconds,
            pipeline_instructions=summary.busy.instructions,
            pipeline_source=summary.busy.source,
            started=manifest.started,
        )
    first, reference = summary.first_subset, summary.primary_reference
    latency = summary.latency
    return EvalHeadline(
        run_id=run.id,
        kind=run.kind,
        model=run.model,
        board=run.board,
        samples=summary.samples,
        subsets=",".join(summary.subsets),
        device_accuracy=first.device.accuracy if first else None,
        device_accuracy_ci95=first.device.accuracy_ci95 if first else None,
        agreement=first.versus[reference].agreement if first and reference else None,
        latency_median_us=latency.micros.median if latency.micros else None,
        instructions_median=latency.instructions.median if latency.instructions else None,
        latency_source=latency.source,
        arena_used=summary.arena.used,
        arena_source=summary.arena.source,
        started=manifest.started,
    )


def checked_spec(spec: str) -> str:
    """A RUN as given: a run id under --results, or a run folder's path without '..' and control characters
    (docs/api.md reads a run back by its folder)."""
    if has_control(spec) or ".." in Path(spec).parts or not spec.strip():
        raise UserError(f"RUN {spec!r} is not a run id; runs are read from {setting('results')}")
    return spec


def load_run(spec: str, root: Path = Path("results")) -> Run:
    """A run by folder path, or under `root` by its id or a brief name (harness/results/run_refs.py)."""
    path = Path(checked_spec(spec))
    if not os.path.lexists(path / MANIFEST):
        path = root / (run_name(spec, root) or spec)
    manifest, summary = read_files(path, spec)
    run = Run(path, manifest, summary)
    run.record  # noqa: B018 (reads the record: a damaged one is refused here, naming the file and field)
    _check_tables(run, spec)
    return run


def run_name(spec: str, root: Path) -> str | None:
    """The name of the run folder under `root` that `spec` names: its id, a unique prefix, latest, latest~N or
    its number in `harness runs list` (None: none; the caller says so)."""
    from harness.results.run_refs import resolve

    if Path(spec).name == spec and _is_run_folder(root / spec):
        return spec  # a run's own id: no need to read every run folder to find it
    return resolve(spec, run_folders(root), lambda: numbered_runs(root), str(root))


def unfinished_name(spec: str, root: Path) -> str | None:
    """The id of the unfinished run under `root` that `spec` names for --resume: its id or a unique prefix of
    it, latest or latest~N (counting unfinished runs: their ids begin with the time they started), or a number
    of `harness runs list` (a finished run: resuming it says so)."""
    from harness.results.run_refs import resolve

    if not root.is_dir():
        return None
    unfinished = sorted(
        path.name[1 : -len(PARTIAL)]
        for path in root.iterdir()
        if path.name.startswith(".") and path.name.endswith(PARTIAL) and path.is_dir()
    )
    if spec not in unfinished and os.path.lexists(root / spec):
        return spec  # a finished run by its id: resuming it says so
    return resolve(spec, unfinished, lambda: numbered_runs(root), str(root), lambda: unfinished, "unfinished run")


PARTIAL = ".partial"  # harness/results/store.py partial_path: .<run id>.partial


def run_folders(root: Path) -> list[str]:
    """The names of the folders under `root` that hold a run's record (none when root is no folder)."""
    if not root.is_dir():
        return []
    return [path.name for path in root.iterdir() if _is_run_folder(path)]


def _is_run_folder(path: Path) -> bool:
    if path.name.startswith(".") or not path.is_dir():
        return False
    return any((path / name).exists() for name in (MANIFEST, SUMMARY)) and kind_of(path) not in OTHER_RECORDS


def numbered_runs(root: Path) -> list[str]:
    """The folder names of the runs `harness runs list` numbers, in its order: number n is item n - 1."""
    return [run.path.name for run in scan_runs(root).runs]


def results_folder(root: Path) -> Path:
    """The results folder a command reads runs from: it must exist and be a folder."""
    if not root.exists():
        raise UserError(
            f"results folder {root} does not exist; pass the folder the runs were written to as {setting('results')}"
        )
    if not root.is_dir():
        raise UserError(
            f"results folder {root} is a file, not a folder; pass the folder of run folders as {setting('results')}"
        )
    return root


# Records of another kind that share a results folder with runs (harness/lpirc/referee.py's sessions).
OTHER_RECORDS = ("referee",)


@dataclass(frozen=True)
class Listing:
    runs: list[Run]  # oldest first, eval and stream runs alike: run n of `harness runs list` is runs[n - 1]
    damaged: dict[str, UserError]  # folder name -> why it is damaged (one line: its file and field)


def scan_runs(root: Path) -> Listing:
    """The eval and stream runs under `root`, and the run folders that are damaged (referee sessions, hidden
    and unfinished runs are not listed; a folder with no record at all is not a run folder)."""
    runs, damaged = [], {}
    for path in sorted(results_folder(root).iterdir()):
        if not _is_run_folder(path):
            continue  # referee sessions are listed by their own commands
        try:
            run = load_run(str(path))  # reads the record and checks its tables
        except UserError as exc:
            damaged[path.name] = exc
            continue
        runs.append(run)
    return Listing(sorted(runs, key=lambda run: run.record.manifest.started), damaged)
