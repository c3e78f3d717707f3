"""Runs as the Python API hands them back: the run folder read through harness/results/runs.py, its
summary and manifest typed (harness/results/record.py), its samples as a pandas DataFrame, and its
figures as values that explain themselves in an assert (harness/api/figures.py)."""

from dataclasses import dataclass, field
from pathlib import Path

from harness.api.figures import Figure
from harness.errors import UserError
from harness.extras import require
from harness.results.layer_trace import LayerTrace
from harness.results.manifest import Manifest
from harness.results.op_profile import OperatorProfile
from harness.results.runs import SAMPLES, Run
from harness.results.runs import load_run as _load_run
from harness.results.summary import EvalSummary, StreamSummary


@dataclass(frozen=True)
class RunView:
    """What every run has: its id, folder, board and model, and its record (manifest and summary)."""

    run: Run
    notes: list[str] = field(default_factory=list)  # what the run said once (labels cleaned or contradicted)

    @property
    def id(self) -> str:
        """The run's id: its folder's name under the results folder."""
        return self.run.id

    @property
    def path(self) -> Path:
        """The run folder."""
        return self.run.path

    @property
    def board(self) -> str:
        """The board file's id the run ran on."""
        return self.run.board

    @property
    def model(self) -> str:
        """The model card's name."""
        return self.run.model

    @property
    def manifest(self) -> Manifest:
        """Where the run's figures come from: harness, board, firmware, model, data, settings."""
        return self.run.record.manifest

    @property
    def source(self) -> str:
        """Where the device's figures come from: device, emulated (QEMU) or sim (the virtual board)."""
        from harness.results.gate_figures import device_source

        return device_source(self.run)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}: {self.model} on {self.board} ({self.source}), {self.path}>"


class EvalRun(RunView):
    """An eval run: per-subset scores of the device and the host references, latency, arena."""

    @property
    def summary(self) -> EvalSummary:
        """The run's figures (summary.json), typed: per-subset scores, latency, arena, references, …"""
        return self.run.eval_summary

    @property
    def profile(self) -> OperatorProfile | None:
        """The operator profile `harness eval --profile` kept (by_kind, coverage, headline()), or None."""
        return self.summary.profile

    @property
    def layer_traces(self) -> list[LayerTrace]:
        """The layer traces `harness eval --trace-layers N` kept (first_departure, headline(); each as a DataFrame
        through harness.api.layers_frame)."""
        return self.summary.layer_traces

    def samples_frame(self):
        """samples.parquet, one row per sample, as a pandas DataFrame (pandas: the `lab` extra)."""
        require("pandas", "run.samples_frame()")
        import pyarrow.parquet as pq

        from harness import reading

        with reading.open_binary(self.path / SAMPLES, reading.SAMPLES) as handle:
            return pq.read_table(handle, **reading.PARQUET_ON_THIS_THREAD).to_pandas()

    def check(self, gates: str | Path, baseline: "EvalRun | None" = None, strict: bool = False) -> list:
        """The gates file's verdicts on this run, as `harness runs check` judges them (harness/results/gates.py):
        a GateResult per gate, passed, failed or not judged."""
        from harness.eval.subsets import judge_gates
        from harness.results.gates_file import load_gates

        against = baseline.run if baseline else None
        return judge_gates(self.run, load_gates(Path(gates)), against, strict=strict)

    @property
    def _data(self) -> str:
        """A made-up dataset's figures say what it is (the demo sets: `synthetic` in summary.json)."""
        summary = self.summary
        return summary.dataset_label if summary.synthetic else ""

    def _subset(self, subset: str):
        subsets = self.summary.subsets
        if subset not in subsets:
            raise UserError(f"run {self.id} has no subset {subset!r}; it has {', '.join(subsets)}")
        return subsets[subset]

    def _score(self, subset: str, reference: str | None):
        entry = self._subset(subset)
        if reference is None:
            return entry.device, f"device ({self.source})"
        if reference not in entry.host:
            raise UserError(f"run {self.id} has no host reference {reference!r}; it has {', '.join(entry.host)}")
        return entry.host[reference], "host"

    def accuracy(self, subset: str = "all", reference: str | None = None) -> Figure:
        """The device's accuracy on a subset (a host reference's with `reference`), with its Wilson 95 %
        interval and n."""
        score, source = self._score(subset, reference)
        who = reference or "device"
        return Figure(
            f"{who} accuracy on {subset}",
            score.accuracy,
            source,
            n=score.n,
            ci95=tuple(score.accuracy_ci95) if score.accuracy_ci95 else None,
            missing="n = 0",
            data=self._data,
        )

    def f1(self, subset: str = "all", reference: str | None = None) -> Figure:
        """The F1 a gate judges on a subset: f1_wv where the whole negative pool was evaluated, else f1_counts."""
        from harness.results.score_gates import f1_missing, gated_f1

        score, source = self._score(subset, reference)
        value, which = gated_f1(score)
        return Figure(
            f"{reference or 'device'} {which} on {subset}",
            value,
            source,
            n=score.n,
            missing=f1_missing(score),
            data=self._data,
        )

    def agreement(self, subset: str = "all", reference: str | None = None) -> Figure:
        """The share of samples on which the device predicts what a host reference does (default: the
        primary one)."""
        reference = reference or self.summary.primary_reference
        if reference is None:
            return Figure(f"agreement on {subset}", None, "host", missing="the run has no host reference")
        entry = self._subset(subset)
        versus = entry.versus.get(reference)
        return Figure(
            f"agreement of the device with {reference} on {subset}",
            versus.agreement if versus else None,
            f"device ({self.source}) vs host",
            n=entry.n,
            missing=f"no host reference {reference}",
            data=self._data,
        )

    def _latency_figure(self, figure: str, stat: str) -> Figure:
        """One of the latency record's figures (harness/results/judgeable.py), µs shown in ms."""
        from harness.results.judgeable import UNITS, figures

        latency = self.summary.latency
        stats = getattr(latency, figure)
        value = getattr(stats, stat) if stats else None
        timed = figure == "micros"
        unit = "ms" if timed else UNITS[figure]
        has = ", ".join(UNITS[f] for f in figures(latency)) or "none"
        return Figure(
            f"{stat} latency" if timed else f"{stat} {figure} per inference",
            None if value is None else value / 1000 if timed else value,
            latency.source,
            unit=unit,
            n=self.summary.samples,
            missing=f"no latency in {unit} ({latency.source} latency: {has})",
        )

    def latency_ms(self, stat: str = "median") -> Figure:
        """The device's latency in ms (median, p90, min or max), labelled with its source. QEMU boards count
        instructions, not time: their figure is missing, and says so (see `instructions`, `latency`)."""
        return self._latency_figure("micros", stat)

    def instructions(self, stat: str = "median") -> Figure:
        """The instructions per inference QEMU -icount counted (source emulated), exact; missing elsewhere."""
        return self._latency_figure("instructions", stat)

    def cycles(self, stat: str = "median") -> Figure:
        """The cycles per inference a board's cycle counter gave (source device); missing elsewhere."""
        return self._latency_figure("cycles", stat)

    def latency(self, stat: str = "median") -> Figure:
        """The device's latency in the most exact figure its board gives: instructions under QEMU, cycles from
        a board's cycle counter, else ms; its `unit` says which."""
        from harness.results.judgeable import figures

        return self._latency_figure(next(iter(figures(self.summary.latency)), "micros"), stat)


class StreamRun(RunView):
    """A stream run: the detections on the device and the host and, against a ledger, their scores."""

    @property
    def summary(self) -> StreamSummary:
        """The run's figures (summary.json), typed: detections, pipeline compute, scores."""
        return self.run.stream_summary

    @property
    def device_equals_host(self) -> bool:
        """Whether the board and the host detected the same keywords at the same times and scores."""
        return self.summary.device_equals_host

    @property
    def scores(self) -> dict:
        """policy -> its score (OptimalScore, TfCompatScore, MlperfSwwScore) or NotScorable; empty without a
        ledger."""
        return self.summary.scores.by_policy() if self.summary.scores else {}


def view(run: Run, notes: list[str] | None = None) -> EvalRun | StreamRun:
    """A run folder read back (harness/results/runs.py) as the API's run of its kind."""
    return (EvalRun if run.kind == "eval" else StreamRun)(run, notes or [])


def load_run(run: str | Path, results: str | Path | None = None) -> EvalRun | StreamRun:
    """A finished run, by its folder, or under `results` ($HARNESS_RESULTS_DIR, else results) by its id or a
    brief name: a unique prefix of the id, latest, latest~N, or its number in `harness runs list`."""
    from harness.paths import results_dir
    from harness.results.store import results_text

    return view(_load_run(str(run), results_text(results_dir(results))))
