"""`harness runs check`: gates over a run (and a baseline), each passed, failed or not judged (JUnit XML for lab CI:
harness/results/junit.py).

Eval runs are gated on absolute floors and ceilings (accuracy and F1 per subset, latency in ms, instructions
or cycles, arena and flash bytes), on agreement with the host reference and accuracy and F1 against the host,
and on accuracy, latency, arena and flash against a baseline; stream runs on the agreement of device and host
detections and on the optimal policy's recall, precision, false alarms and unwanted triggers per hour. A gate
naming a figure the run's kind does not have, or a `[gate.SUBSET]` table naming a subset the run's task has
not, is refused before any gate is judged. A gate whose figure the run (or the missing baseline) does not give
is not judged, and says why; `strict` fails it, and a gate beside whose judged subsets a subset of its own
table went unjudged. Every figure names its source: the device's (device, emulated or sim, as the run's board
is), the host reference's (host), the baseline's. Each gate kind is one `Gate` in gates_file.py GATES: its
bounds and its judge for each kind of run, in a module of judges by family (score_gates.py, latency_gates.py,
bytes_gates.py, stream_gates.py); this module judges every gate of a gates file through it."""

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass

from harness.errors import UserError
from harness.results.gates_file import GATES, bound_text, listed
from harness.results.runs import Run
from harness.results.summary import EvalSummary
from harness.results.verdicts import Part, Status, Verdict
from harness.results.verdicts import not_judged as _not_judged


@dataclass(frozen=True)
class GateResult:
    name: str
    status: Status
    figure: str  # the figure judged, with its unit and source ("n/a" when not judged)
    bound: str  # the gate's bounds as the gates file gives them
    detail: str  # one line: figure and bound, or why it was not judged
    parts: tuple[Part, ...] = ()  # a gate over subsets: each judged or named subset's verdict

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "status": self.status,
            "passed": self.passed,
            "figure": self.figure,
            "bound": self.bound,
            "detail": self.detail,
            "subsets": [part.as_dict() for part in self.parts],
        }


def _result(name: str, settings: dict, verdict: Verdict, strict: bool) -> GateResult:
    bound = bound_text(name, settings)
    if verdict.figure is None:
        detail = f"not judged: {verdict.note}; {bound}"
        if strict:
            return GateResult(name, "failed", "n/a", bound, f"{detail} (--strict)")
        return GateResult(name, "not judged", "n/a", bound, detail)
    detail = f"{verdict.figure}; {bound}" + (f"; {verdict.note}" if verdict.note else "")
    parts = verdict.parts
    if strict and verdict.unjudged:
        named = ", ".join(verdict.unjudged)
        own = "its" if len(verdict.unjudged) == 1 else "their"
        detail += f"; {named} not judged, yet bounded by {own} own table (--strict)"
        failed = {p.subset: dataclasses.replace(p, status="failed", detail=f"{p.detail} (--strict)") for p in parts}
        parts = tuple(failed[p.subset] if p.subset in verdict.unjudged else p for p in parts)
        return GateResult(name, "failed", verdict.figure, bound, detail, parts)
    return GateResult(name, verdict.status, verdict.figure, bound, detail, parts)


def gate_kind(run: Run) -> str:
    """The run's kind as the gates see it: an eval run of anomaly scores has AUC, not accuracies."""
    if run.kind == "eval" and run.eval_summary.anomaly is not None:
        return "anomaly"
    return run.kind


def require_applicable(gates: dict, run: Run, baseline: Run | None = None, subsets: Collection[str] = ()) -> None:
    """Every gate must judge a figure the run has, every [gate.SUBSET] table name one of `subsets` (those the
    run's task has: harness/eval/subsets.py gate_subsets), and a baseline must be a run of the same kind."""
    kind = gate_kind(run)
    for name, settings in gates.items():
        if kind not in GATES[name].kinds:
            raise UserError(
                f"gate [{name}] judges a figure {kind} runs do not have ({run.id} is {_a(kind)} run); "
                f"gates for {kind} runs: {listed(kind)}"
            )
        for subset in (key for key, value in settings.items() if isinstance(value, dict)):
            if subset not in subsets:
                raise UserError(
                    f"gate [{name}.{subset}] names no subset {run.id} can have; valid: {', '.join(subsets) or 'none'}"
                )
    if baseline is not None and gate_kind(baseline) != kind:
        raise UserError(
            f"baseline {baseline.id} is {_a(gate_kind(baseline))} run, {run.id} {_a(kind)} run: "
            "gate against a run of the same kind"
        )


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _verdict(name: str, settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """The gate's judge for the run's kind, after what every gate needs: the baseline its settings compare with,
    and the primary host reference of an eval run for a gate comparing the device with it."""
    gate = GATES[name]
    if gate.needs_baseline(settings) and baseline is None:
        return _not_judged("this gate compares with a baseline: pass --baseline RUN")
    summary = run.record.summary
    if gate.reference and isinstance(summary, EvalSummary) and summary.primary_reference is None:
        return _not_judged("the run has no host reference (eval --references)")
    return gate.judges[gate_kind(run)](settings, run, baseline)


def check_gates(
    run: Run, gates: dict, baseline: Run | None = None, strict: bool = False, *, subsets: Collection[str]
) -> list[GateResult]:
    """Every gate's result; `subsets`: the subsets the run's task has (harness/eval/subsets.py gate_subsets);
    `strict`: a gate not judged fails, and one with a subset of its own table not judged."""
    require_applicable(gates, run, baseline, subsets)
    return [
        _result(name, settings, _verdict(name, settings, run, baseline), strict) for name, settings in gates.items()
    ]
