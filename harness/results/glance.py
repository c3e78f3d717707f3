"""The report's summary on top, a row per run: board, model, dataset, n, accuracy with its interval, agreement
with the host, latency, footprint and, with a gates file, the gates' verdicts. Every figure is taken from what
`harness runs` lists (runs.headline) and `harness runs check` judges (harness/eval/subsets.py judge_gates, which
the caller passes), never computed again here."""

from collections.abc import Callable
from dataclasses import dataclass

from harness.console import percent
from harness.errors import UserError
from harness.results.bytes_gates import flash_used
from harness.results.cells import interval_cell, latency_cell
from harness.results.gates import GateResult
from harness.results.op_profile import OperatorProfile
from harness.results.runs import EvalHeadline, Run, headline

VERDICT_WORDS = {"passed": "PASS", "failed": "FAIL", "not judged": "NOT JUDGED"}


@dataclass(frozen=True)
class Gated:
    """The gates' verdicts on one run, or why the gates file does not apply to it."""

    results: list[GateResult]
    refused: str | None = None

    @property
    def tally(self) -> str:
        if self.refused:
            return "not applicable"
        failed = [r.name for r in self.results if r.status == "failed"]
        unjudged = sum(r.status == "not judged" for r in self.results)
        passed = len(self.results) - len(failed) - unjudged
        word = "FAIL" if failed else "PASS" if not unjudged else "NOT JUDGED"
        counts = [f"{passed} passed", *([f"{len(failed)} failed: {', '.join(failed)}"] if failed else [])]
        counts += [f"{unjudged} not judged"] if unjudged else []
        return f"{word} ({'; '.join(counts)})"

    @property
    def status(self) -> str:
        if self.refused:
            return "not judged"
        statuses = {r.status for r in self.results}
        return "failed" if "failed" in statuses else "not judged" if "not judged" in statuses else "passed"


def gated(runs: list[Run], judge: Callable[[Run], list[GateResult]]) -> dict[str, Gated]:
    """Each run's verdicts, `judge` being `harness runs check RUN --gates FILE [--baseline BASELINE]`'s; a run
    the file's gates do not fit (a stream run under eval gates) says why instead."""
    found = {}
    for run in runs:
        try:
            found[run.id] = Gated(judge(run))
        except UserError as why:
            found[run.id] = Gated([], str(why))
    return found


@dataclass(frozen=True)
class Glance:
    """One run's row of the summary: each cell a figure with its source."""

    run: Run
    dataset: str
    subset: str  # the subset the accuracy is on: the first (as `harness runs` lists it)
    more: int  # the run's other subsets, in its details
    n: str  # the subset's samples
    accuracy: str  # with its Wilson 95 % interval
    agreement: str
    latency: str
    footprint: list[str]
    gates: Gated | None
    profile: str | None = None  # its costliest kind of operator, where the run has an operator profile


def _eval(run: Run, head: EvalHeadline, gates: Gated | None) -> Glance:
    summary = run.eval_summary
    reference = summary.primary_reference
    agreement = f"{percent(head.agreement)} % with {reference} (host)" if head.agreement is not None else "n/a"
    arena = f"arena {head.arena_used:,} B ({head.arena_source})" if head.arena_used else "arena not reported"
    used, kind = flash_used(run)
    flash = f"{'flash' if kind == 'firmware image' else kind} {used:,} B" if used else "flash not reported"
    subsets = list(summary.subsets)
    first = summary.first_subset
    if summary.anomaly is not None:
        auc = summary.anomaly.device.auc
        accuracy, subset, n = ("n/a" if auc is None else f"AUC {auc:.3f}"), "files", summary.anomaly.device.files
    else:
        accuracy = interval_cell(head.device_accuracy, head.device_accuracy_ci95)
        subset, n = (subsets[0], first.n) if first else ("none", 0)
    return Glance(
        run=run,
        dataset=summary.dataset or "not recorded",
        subset=subset,
        more=max(len(subsets) - 1, 0),
        n=f"{n:,}",
        accuracy=accuracy,
        agreement=agreement,
        latency=latency_cell(head),
        footprint=[arena, flash],
        gates=gates,
        profile=_costliest(summary.profile),
    )


def _costliest(profile: OperatorProfile | None) -> str | None:
    top = profile.by_kind[0] if profile and profile.by_kind else None
    if top is None or top.share is None:
        return None
    return f"{top.operator} {percent(top.share)} % of it"


def _stream(run: Run, gates: Gated | None) -> Glance:
    head, summary = headline(run), run.stream_summary
    recall = f"recall {percent(head.recall)} % ({head.hits} of {head.events})" if head.recall is not None else "n/a"
    busy = summary.busy
    if busy.instructions is not None:
        latency = f"pipeline {busy.instructions:,} instr ({busy.source})"
    elif busy.real_time_factor is not None:
        latency = f"pipeline {busy.real_time_factor:.3f}x real time ({busy.source})"
    else:
        latency = f"n/a ({busy.source})"
    arena = summary.frontend_arena_used
    footprint = [f"frontend arena {arena.bytes:,} B ({arena.source})"] if arena and arena.bytes else []
    return Glance(
        run=run,
        dataset=f"stream {summary.audio.file}",
        subset="optimal policy",
        more=0,
        n=f"{head.events} events" if head.events is not None else f"{head.detections} detections",
        accuracy=recall,
        agreement="detections identical to the host's" if head.device_equals_host else "DIFFERENT from the host's",
        latency=latency,
        footprint=footprint,
        gates=gates,
    )


def glances(runs: list[Run], gates: dict[str, Gated]) -> list[Glance]:
    rows = []
    for run in runs:
        head = headline(run)
        verdicts = gates.get(run.id)
        rows.append(_eval(run, head, verdicts) if run.kind == "eval" else _stream(run, verdicts))
    return rows
