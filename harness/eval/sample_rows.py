"""samples.parquet: one row per sample in the run's order, written a batch at a time from the journal's
row groups (harness/results/journal.py), and the columns a summary reads back from it, one at a time.

Nothing here holds more than a batch of rows: a run of the whole Wake Vision test split writes and
summarises in the memory of a few thousand samples' numbers.
"""

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.eval.outputs import diff_steps
from harness.eval.sampling import Selection
from harness.eval.tasks import Task
from harness.link.protocol import TickKind, Timing
from harness.model.dut import DutComputation
from harness.results.journal import HOST_COLUMN, Journal, entries_table
from harness.samples import Sample

BATCH = 1024  # rows per row group of samples.parquet
GROUPS_KEPT = 4  # journal row groups kept open while gathering a batch (arrivals are nearly in order)


@dataclass(frozen=True)
class RowMaker:
    """What each row is made from besides its journal entry."""

    samples: list[Sample]  # the run's, by index
    task: Task  # reads each output (predict)
    computation: DutComputation
    references: list[str]
    subsets: list
    selection: Selection
    latency_source: str

    def schema(self) -> pa.Schema:
        fields = [("sample_id", pa.string()), ("label", pa.int64())]
        fields += [(f"in_{s.name}", pa.bool_()) for s in self.subsets]
        fields += [(f"flag_{flag}", pa.int64()) for flag in (self.samples[0].flags if self.samples else ())]
        fields += [("device_output", pa.binary()), ("device_prediction", pa.int64()), ("device_score", pa.float64())]
        for name in self.references:
            fields += [
                (f"{name}_output", pa.binary()),
                (f"{name}_prediction", pa.int64()),
                (f"{name}_score", pa.float64()),
                (f"{name}_max_diff_steps", pa.float64()),
            ]
        fields += [
            ("ticks", pa.int64()),
            ("tick_hz", pa.int64()),
            ("timer", pa.string()),
            ("cycles", pa.int64()),
            ("microseconds", pa.float64()),
            ("instructions", pa.int64()),
            ("latency_source", pa.string()),
            ("board", pa.string()),
        ]
        return pa.schema(fields)

    def _read(self, outputs: list[bytes]) -> tuple[list[int], list[float]]:
        pairs = [self.task.predict(raw, self.computation.output) for raw in outputs]
        return [int(p) for p, _ in pairs], [float(s) for _, s in pairs]

    def columns(self, entries: pa.Table) -> dict:
        """The rows of a batch of journal entries (in the run's order)."""
        samples = [self.samples[i] for i in entries.column("index").to_pylist()]
        device = entries.column("device_output").to_pylist()
        columns: dict = {"sample_id": [s.id for s in samples], "label": [s.label for s in samples]}
        for subset in self.subsets:  # the samples the subset is scored on, as its summary counts them
            columns[f"in_{subset.name}"] = self.selection.member_mask(subset, samples).tolist()
        for flag in samples[0].flags if samples else ():
            columns[f"flag_{flag}"] = [s.flags[flag] for s in samples]
        columns["device_output"] = device
        columns["device_prediction"], columns["device_score"] = self._read(device)
        output, step = self.computation.output, self.computation.step
        for name in self.references:
            host = entries.column(HOST_COLUMN + name).to_pylist()
            columns[f"{name}_output"] = host
            columns[f"{name}_prediction"], columns[f"{name}_score"] = self._read(host)
            pairs = zip(device, host, strict=True)
            columns[f"{name}_max_diff_steps"] = [diff_steps(d, h, output, step) for d, h in pairs]
        timings = [
            Timing(ticks, hz, TickKind(timer))
            for ticks, hz, timer in zip(
                entries.column("ticks").to_pylist(),
                entries.column("tick_hz").to_pylist(),
                entries.column("timer").to_pylist(),
                strict=True,
            )
        ]
        instructions = entries.column("instructions").to_pylist()
        columns["ticks"] = [t.ticks for t in timings]
        columns["tick_hz"] = [t.tick_hz for t in timings]
        columns["timer"] = [t.kind.name.lower() for t in timings]
        columns["cycles"] = [t.cycles for t in timings]
        # Real time only: an emulator's virtual time is not presented as latency.
        timed = zip(timings, instructions, strict=True)
        columns["microseconds"] = [None if n is not None else t.micros for t, n in timed]
        columns["instructions"] = instructions
        columns["latency_source"] = [self.latency_source] * len(samples)
        columns["board"] = entries.column("board").to_pylist()
        return columns


class _Groups:
    """The journal's row groups and lines, read a group at a time, to gather rows by sample index."""

    def __init__(self, journal: Journal, samples: int):
        self._paths = journal.groups()
        self._open: dict[int, pa.Table] = {}
        self.group = np.full(samples, -1, np.int64)
        self.row = np.full(samples, -1, np.int64)
        for g, path in enumerate(self._paths):
            indices = pq.read_table(path, columns=["index"]).column("index").to_numpy()
            self.group[indices], self.row[indices] = g, np.arange(len(indices))
        lines = list(journal.load().values())
        self._lines = None
        if lines:
            self._lines = entries_table(lines)
            indices = self._lines.column("index").to_numpy()
            self.group[indices], self.row[indices] = len(self._paths), np.arange(len(indices))

    def table(self, g: int) -> pa.Table:
        if g == len(self._paths):
            return self._lines
        if g not in self._open:
            if len(self._open) >= GROUPS_KEPT:
                self._open.pop(next(iter(self._open)))
            self._open[g] = pq.read_table(self._paths[g])
        return self._open[g]

    def gather(self, first: int, last: int) -> pa.Table:
        """Samples first..last-1 (every one journaled), in that order."""
        groups, rows = self.group[first:last], self.row[first:last]
        if (groups < 0).any():
            missing = first + int(np.argmax(groups < 0))
            raise RuntimeError(f"sample {missing} is not journaled")  # every sample is, before rows are written
        parts, order = [], []
        for g in np.unique(groups):
            at = np.flatnonzero(groups == g)
            table = self.table(int(g))
            parts.append(table.take(pa.array(rows[at])))
            order.append(at)
        gathered = pa.concat_tables(parts, promote_options="default")
        return gathered.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))


def write_samples(path, journal: Journal, maker: RowMaker) -> None:
    """samples.parquet from every journaled sample, in the run's order, a batch per row group."""
    groups = _Groups(journal, len(maker.samples))
    schema = maker.schema()
    with pq.ParquetWriter(path, schema) as writer:
        for first in range(0, len(maker.samples), BATCH):
            entries = groups.gather(first, min(first + BATCH, len(maker.samples)))
            writer.write_table(pa.table(maker.columns(entries), schema=schema))


@dataclass
class StoredRows:
    """The columns a summary needs, read back from samples.parquet one at a time."""

    device: tuple[np.ndarray, np.ndarray]  # (predictions, scores)
    host: dict[str, tuple[np.ndarray, np.ndarray]]
    diffs: dict[str, np.ndarray]
    bit_exact: dict[str, int]  # samples whose device output bytes equal the reference's
    micros: np.ndarray  # float64, NaN where there is none (emulated boards)
    cycles: np.ndarray  # float64, NaN where the timer counts no cycles
    instructions: np.ndarray  # float64, NaN on real boards
    board: np.ndarray  # object: which board ran each sample (None: one board)


def read_rows(path, references: list[str]) -> StoredRows:
    file = pq.ParquetFile(path)

    def column(name: str) -> pa.ChunkedArray:
        return file.read(columns=[name]).column(name)

    def numbers(name: str) -> np.ndarray:  # nulls as NaN
        return column(name).to_numpy(zero_copy_only=False).astype(np.float64)

    def exact(name: str) -> int:
        both = file.read(columns=["device_output", f"{name}_output"])
        return int(pc.sum(pc.equal(both.column(0), both.column(1))).as_py() or 0)

    def pair(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        return column(f"{prefix}_prediction").to_numpy(), column(f"{prefix}_score").to_numpy()

    return StoredRows(
        device=pair("device"),
        host={name: pair(name) for name in references},
        diffs={name: column(f"{name}_max_diff_steps").to_numpy() for name in references},
        bit_exact={name: exact(name) for name in references},
        micros=numbers("microseconds"),
        cycles=numbers("cycles"),
        instructions=numbers("instructions"),
        board=np.array(column("board").to_pylist(), dtype=object),
    )
