"""`harness perf` and `harness profile`: latency of one resident input, whole and per operator."""

from dataclasses import dataclass

import numpy as np

from harness.boards import Board
from harness.device.drivers import driver_type
from harness.device.figures import Figure, latency_figure
from harness.energy.meter import Meter
from harness.errors import UserError, setting
from harness.eval.inputs import sample_preparation
from harness.eval.perf_energy import MLPERF_WINDOW_SECONDS, MLPERF_WINDOWS, PerfEnergy, measure_energy
from harness.link.client import REAL_CLOCKS, DeviceError
from harness.link.protocol import ErrorCode
from harness.link.roles import Profiling, require
from harness.link.session import DeviceSession
from harness.model.card import ModelCard
from harness.samples import Dataset, Sample


def sample_tensor(card: ModelCard, computation, model, dataset: Dataset, sample_id: str | None = None) -> np.ndarray:
    """The dataset's first sample (or the one of that id) as an eval run makes its input (an image
    preprocessed, a clip through the frontend, a runner file as it is): a real input, not zeros."""
    if not dataset.samples:
        raise UserError(f"dataset {dataset.name} is empty; pass another {setting('dataset')}")
    preparation = sample_preparation(card, computation, model)
    return preparation.tensor_of(chosen_sample(dataset, sample_id))


def chosen_sample(dataset: Dataset, sample_id: str | None) -> Sample:
    if sample_id is None:
        return dataset.samples[0]
    for sample in dataset.samples:
        if sample.id == sample_id:
            return sample
    raise UserError(
        f"dataset {dataset.name} has no sample {sample_id!r}; pass the id of one of its samples to "
        f"{setting('sample')} (its file name, as its labels name it), or leave it out for the first"
    )


@dataclass
class PerfReport:
    board: str
    unit: str
    source: str
    runs: list[float]
    warmups: int
    mlperf_windows: list[float] | None = None
    energy: PerfEnergy | None = None
    model: str | None = None  # the model card's name

    def stats(self) -> dict:
        values = np.asarray(self.runs, dtype=float)
        return {
            "min": float(values.min()),
            "median": float(np.median(values)),
            "p95": float(np.percentile(values, 95)),
            "max": float(values.max()),
        }


def run_perf(
    client: DeviceSession,
    board: Board,
    data: bytes,
    runs: int,
    warmups: int,
    mlperf: bool,
    meter: Meter | None = None,
    window_seconds: float = MLPERF_WINDOW_SECONDS,
) -> PerfReport:
    """The timing pass; MLPerf-style latency windows with `mlperf`; with a `meter` (opened, not started),
    energy per inference in MLPerf Tiny's energy-mode windows, their invoke count from the timing pass."""
    timings = client.bench(data, runs, warmups)
    figures = [latency_figure(t, board) for t in timings]
    report = PerfReport(board.id, figures[0].unit, figures[0].source, [f.value for f in figures], warmups)
    if mlperf:
        report.mlperf_windows = [_window(client, board, data) for _ in range(MLPERF_WINDOWS)]
    if meter is not None:
        if not all(t.kind in REAL_CLOCKS and t.seconds for t in timings):
            raise UserError(
                f"{board.id} does not time invokes with a real clock: energy windows need the device's own "
                "timing (QEMU boards count instructions); meter a real board or the virtual board"
            )
        per_inference = float(np.median([t.seconds for t in timings]))
        report.energy = measure_energy(client, board, data, meter, per_inference, window_seconds)
    return report


def _window(client: DeviceSession, board: Board, data: bytes) -> float:
    """Mean figure per inference over invokes adding up to at least 10 s of device time."""
    figures, seconds = [], 0.0
    while seconds < MLPERF_WINDOW_SECONDS:
        batch = client.bench(data, max(1, min(100, len(figures) or 1)))
        figures += [latency_figure(t, board).value for t in batch]
        seconds += sum(t.seconds or 0 for t in batch)
        if not any(t.seconds for t in batch):
            raise UserError(f"{board.id} has no timer: an MLPerf-style window cannot be measured")
    return float(np.mean(figures))


@dataclass
class ProfileReport:
    board: str
    total: Figure
    operators: list[tuple[str, Figure]]
    operators_run: int
    model: str | None = None  # the model card's name

    @property
    def coverage(self) -> float | None:
        """Share of the whole invoke the per-operator figures account for."""
        if not self.total.value:
            return None
        return sum(f.value for _, f in self.operators) / self.total.value


def run_profile(client: DeviceSession, board: Board, data: bytes) -> ProfileReport:
    try:
        total, ops, operators_run = require(client, Profiling).profile(data)
    except DeviceError as exc:
        if exc.code == ErrorCode.UNSUPPORTED:
            raise UserError(f"{board.id} cannot time operators: {driver_type(board).no_profiler}") from exc
        raise
    return ProfileReport(
        board.id, latency_figure(total, board), [(name, latency_figure(t, board)) for name, t in ops], operators_run
    )
