"""`harness check`: gates over a run (and a baseline), each passed, failed or not judged (JUnit XML for lab CI:
harness/results/junit.py).

Eval runs are gated on absolute floors and ceilings (accuracy and F1 per subset, latency in ms, instructions
or cycles, arena and flash bytes), on agreement with the host reference and accuracy and F1 against the host,
and on accuracy, latency, arena and flash against a baseline (latency: harness/results/latency_gates.py);
stream runs on the agreement of device and host detections and on the optimal policy's recall, precision,
false alarms and unwanted triggers per hour. A gate naming a figure the run's kind does not have, or a
`[gate.SUBSET]` table naming a subset the run's task has not, is refused before any gate is judged. A gate
whose figure the run (or the missing baseline) does not give is not judged, and says why; `strict` fails it,
and a gate beside whose judged subsets a subset of its own table went unjudged. Every figure names its
source: the device's (device, emulated or sim, as the run's board is), the host reference's (host), the
baseline's. Each gate's bounds are declared in gates_file.py GATES, its judge here in EVAL_JUDGES or
_stream_gate."""

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass

from harness.errors import UserError
from harness.results import latency_gates
from harness.results.gates_file import GATES, bound_text, listed
from harness.results.manifest import FirmwareBuild
from harness.results.runs import Run
from harness.results.summary import EvalSummary, Score, StreamSummary
from harness.results.verdicts import Part, Status, Verdict
from harness.results.verdicts import judged as _judged
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


def _per_subset(
    settings: dict,
    key: str,
    values: dict[str, float | None],
    skipped: dict[str, str],
    source: str,
    which: dict[str, str] | None = None,
) -> Verdict:
    """Judges each subset with a value against its bound: its [gate.SUBSET] table's, else the gate's own for
    every subset. `skipped` names subsets without a value and why; `source` what the figures are (and whose);
    `which` names the figure judged where it differs by subset. Subsets without a value beside judged ones
    are named (those of a table of their own as unjudged); with none judged, not judged."""
    every = settings.get(key)
    own = {subset: bounds[key] for subset, bounds in settings.items() if isinstance(bounds, dict)}
    present = dict.fromkeys([*values, *skipped])
    names = [s for s in present if every is not None or s in own] + [s for s in own if s not in present]
    skipped = {subset: "not in this run" for subset in own if subset not in present} | skipped
    judged, failures, missing, parts = [], [], {}, []
    for subset in names:
        value = values.get(subset)
        bound = own.get(subset, every)
        bound_shown = f"{subset} {key} {bound:g}" if subset in own else f"{key} {bound:g}"
        if value is None:
            missing[subset] = skipped.get(subset, "no value")
            detail = f"not judged: {subset} ({missing[subset]}); {bound_shown}"
            parts.append(Part(subset, "not judged", "n/a", bound_shown, detail))
            continue
        figure = f"{subset} {value:.4f}" + (f" ({which[subset]})" if which and subset in which else "")
        judged.append(figure)
        failed = (value < bound) if key == "min" else (value > bound)
        failures += [subset] if failed else []
        part_figure = f"{source}: {figure}"
        status = "failed" if failed else "passed"
        parts.append(Part(subset, status, part_figure, bound_shown, f"{part_figure}; {bound_shown}"))
    not_judged = "; ".join(f"{subset} ({why})" for subset, why in missing.items())
    if not judged:
        return _not_judged(not_judged or "the run has no subsets")
    notes = [f"{'under' if key == 'min' else 'over'} the bound: {', '.join(failures)}"] if failures else []
    notes += [f"not judged: {not_judged}"] if missing else []
    verdict = _judged(not failures, f"{source}: {', '.join(judged)}", "; ".join(notes))
    unjudged = tuple(subset for subset in missing if subset in own)
    return dataclasses.replace(verdict, unjudged=unjudged, parts=tuple(parts))


def _empty_subsets(summary: EvalSummary) -> dict[str, str]:
    return {subset: "n = 0" for subset, e in summary.subsets.items() if not e.n}


def gated_f1(score: Score) -> tuple[float | None, str]:
    """The F1 an F1 gate judges: the Wake Vision rate-based f1_wv where the subset has it, else f1_counts."""
    return (score.f1_wv, "f1_wv") if score.f1_wv is not None else (score.f1_counts, "f1_counts")


def f1_missing(score: Score) -> str:
    if score.f1_unavailable:
        return f"F1 n/a: {score.f1_unavailable}"
    if score.pool_incomplete:  # a run of an earlier version, which gave no reason
        return f"F1 n/a: negative pool {score.pool_incomplete} evaluated; evaluate with --pools"
    return "F1 n/a: no whole negative pool evaluated"


def device_source(run: Run) -> str:
    """Where the run's device figures come from, as its board is: device, emulated (QEMU) or sim."""
    summary = run.record.summary
    measured = summary.latency.source if isinstance(summary, EvalSummary) else summary.busy.source
    return run.record.manifest.board.latency_source or measured


def _absolute(name: str, settings: dict, run: Run) -> Verdict:
    """The device's accuracy or F1 per subset against floors."""
    summary = run.eval_summary
    skipped = _empty_subsets(summary)
    source = f"device {'accuracy' if name == 'accuracy' else 'F1'} ({device_source(run)})"
    if name == "accuracy":
        values = {subset: e.device.accuracy for subset, e in summary.subsets.items()}
        return _per_subset(settings, "min", values, skipped, source)
    picked = {subset: gated_f1(e.device) for subset, e in summary.subsets.items()}
    skipped |= {
        s: f1_missing(e.device) for s, e in summary.subsets.items() if picked[s][0] is None and s not in skipped
    }
    values = {subset: value for subset, (value, _) in picked.items()}
    which = {subset: which for subset, (_, which) in picked.items()}
    return _per_subset(settings, "min", values, skipped, source, which)


def _drops(summary: EvalSummary, reference: str, metric: str) -> dict[str, float | None]:
    """Per subset, host minus device `metric` (None where either has none)."""
    drops = {}
    for subset, entry in summary.subsets.items():
        host, device = getattr(entry.host[reference], metric), getattr(entry.device, metric)
        drops[subset] = None if host is None or device is None else host - device
    return drops


def _baseline_accuracy_drops(run: Run, baseline: Run) -> tuple[dict[str, float | None], dict[str, str]]:
    """Subsets present in both runs over the same data (equal subset_content_sha256)."""
    now, before = run.eval_summary, baseline.eval_summary
    content = _content(run)
    baseline_content = _content(baseline)
    values, skipped = {}, {}
    for subset, entry in now.subsets.items():
        previous = before.subsets.get(subset)
        if previous is None:
            skipped[subset] = f"not in baseline {baseline.id}"
        elif content.get(subset) is None or content.get(subset) != baseline_content.get(subset):
            skipped[subset] = "different samples than in the baseline (subset_content_sha256)"
        elif entry.device.accuracy is None or previous.device.accuracy is None:
            skipped[subset] = "n = 0"
        else:
            values[subset] = previous.device.accuracy - entry.device.accuracy
    return values, skipped


def _content(run: Run) -> dict[str, str]:
    dataset = run.record.manifest.dataset
    return dataset.subset_content_sha256 if dataset else {}


def _arena(run: Run) -> tuple[int | None, str]:
    arena = run.eval_summary.arena  # "not reported" is None (runs of earlier versions stored 0)
    return arena.used, f"{arena.source} arena"


def _flash(run: Run) -> tuple[int | None, str]:
    manifest = run.record.manifest
    firmware = manifest.device.firmware or FirmwareBuild()
    if firmware.flash_bytes:
        return firmware.flash_bytes, "firmware image"
    return manifest.model.bytes or None, "model file"


def _ceiling(name: str, current: tuple[int | None, str], limit: int) -> Verdict:
    """Arena or flash bytes against a ceiling; flash only as the firmware image's bytes from its ELF."""
    used, kind = current
    if used is None:
        return _not_judged(f"{name} not reported by the DUT")
    if kind == "model file":
        return _not_judged(
            f"no firmware image in this run (the virtual board runs a {used:,}-byte model file); "
            "flash_bytes judges the ELF of firmware harness builds"
        )
    where = "firmware image, from the ELF" if kind == "firmware image" else kind
    return _judged(used <= limit, f"{used:,} bytes ({where})")


def _growth(name: str, current: tuple[int | None, str], previous: tuple[int | None, str], limit: int) -> Verdict:
    (used, kind), (used_before, kind_before) = current, previous
    if used is None or used_before is None:
        which = "this run" if used is None else "the baseline"
        return _not_judged(f"not comparable: {name} not reported by the DUT in {which}")
    if kind != kind_before:
        return _not_judged(f"not comparable: {kind} bytes against the baseline's {kind_before} bytes")
    return _judged(used - used_before <= limit, f"{used_before:,} -> {used:,} bytes ({kind}), {used - used_before:+,}")


ONE_CLASS = "no AUC (the files evaluated hold one class only)"


def _auc_gate(name: str, settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """The device's AUC over files: a floor (auc), or how far under the primary host's (auc_drop) or the
    baseline's (auc_vs_baseline) it is."""
    summary = run.eval_summary
    device, source = summary.anomaly.device.auc, f"device ({device_source(run)})"
    if name == "auc":
        if device is None:
            return _not_judged(ONE_CLASS)
        return _judged(device >= settings["min"], f"{source} AUC {device:.4f}")
    if name == "auc_drop":
        host = summary.anomaly.host.get(summary.primary_reference or "")
        if host is None:
            return _not_judged("the run has no host reference (eval --references)")
        other, what, bound = host.auc, f"{summary.primary_reference} (host) AUC", settings["max"]
    else:
        other = baseline.eval_summary.anomaly.device.auc
        what, bound = f"baseline {baseline.id} device ({device_source(baseline)}) AUC", settings["max_drop"]
    if device is None or other is None:
        return _not_judged(ONE_CLASS)
    drop = other - device
    return _judged(drop <= bound, f"{what} {other:.4f} - {source} {device:.4f} = {drop:+.4f}")


def _agreement(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    summary, reference = run.eval_summary, run.eval_summary.primary_reference
    values = {subset: e.versus[reference].agreement for subset, e in summary.subsets.items()}
    source = f"agreement of the device ({device_source(run)}) with host reference {reference} (host)"
    return _per_subset(settings, "min", values, _empty_subsets(summary), source)


def _host_drop(metric: str):
    """The judge of accuracy_drop or f1_drop: the primary host reference's figure minus the device's."""

    def judge(settings: dict, run: Run, baseline: Run | None) -> Verdict:
        summary, reference = run.eval_summary, run.eval_summary.primary_reference
        shown = "accuracy" if metric == "accuracy" else "F1wv"
        source = f"{shown} of host reference {reference} (host) minus device ({device_source(run)})"
        values = _drops(summary, reference, metric)
        skipped = _empty_subsets(summary)
        if metric == "f1_wv":
            skipped |= {
                s: f"no f1_wv: {summary.subsets[s].device.f1_unavailable or 'needs --pools'}"
                for s, v in values.items()
                if v is None and s not in skipped
            }
        return _per_subset(settings, "max", values, skipped, source)

    return judge


def _accuracy_vs_baseline(settings: dict, run: Run, baseline: Run) -> Verdict:
    values, skipped = _baseline_accuracy_drops(run, baseline)
    source = (
        f"accuracy of baseline {baseline.id} device ({device_source(baseline)}) minus this run's device "
        f"({device_source(run)})"
    )
    return _per_subset(settings, "max_drop", values, skipped, source)


def _bytes(name: str, measure):
    """The judge of a ceiling on bytes (arena_bytes, flash_bytes) or of their growth (arena, flash)."""
    what = name.removesuffix("_bytes")

    def judge(settings: dict, run: Run, baseline: Run | None) -> Verdict:
        if "max" in settings:
            return _ceiling(what, measure(run), settings["max"])
        return _growth(what, measure(run), measure(baseline), settings["max_growth_bytes"])

    return judge


Judge = Callable[[dict, Run, "Run | None"], Verdict]
EVAL_JUDGES: dict[str, Judge] = {  # an eval run's gates (their bounds: harness/results/gates_file.py GATES)
    "accuracy": lambda settings, run, _: _absolute("accuracy", settings, run),
    "f1": lambda settings, run, _: _absolute("f1", settings, run),
    "agreement": _agreement,
    "accuracy_drop": _host_drop("accuracy"),
    "f1_drop": _host_drop("f1_wv"),
    "accuracy_vs_baseline": _accuracy_vs_baseline,
    "auc": lambda settings, run, baseline: _auc_gate("auc", settings, run, baseline),
    "auc_drop": lambda settings, run, baseline: _auc_gate("auc_drop", settings, run, baseline),
    "auc_vs_baseline": lambda settings, run, baseline: _auc_gate("auc_vs_baseline", settings, run, baseline),
    "latency_ms": latency_gates.latency_ms,
    "latency": latency_gates.latency,
    "instructions": latency_gates.counted("instructions"),
    "cycles": latency_gates.counted("cycles"),
    "arena_bytes": _bytes("arena_bytes", _arena),
    "flash_bytes": _bytes("flash_bytes", _flash),
    "arena": _bytes("arena", _arena),
    "flash": _bytes("flash", _flash),
}


def _eval_gate(name: str, settings: dict, run: Run, baseline: Run | None) -> Verdict:
    gate = GATES[name]
    if gate.needs_baseline(settings) and baseline is None:
        return _not_judged("this gate compares with a baseline: pass --baseline RUN")
    if gate.reference and run.eval_summary.primary_reference is None:
        return _not_judged("the run has no host reference (eval --references)")
    return EVAL_JUDGES[name](settings, run, baseline)


def _detection_agreement(summary: StreamSummary, source: str) -> tuple[float, str]:
    """The share of detections device and host both made (label, time and score equal)."""
    device, host = Counter(summary.detections.device), Counter(summary.detections.host)
    common, most = sum((device & host).values()), max(sum(device.values()), sum(host.values()))
    share = common / most if most else 1.0
    return share, f"{common} of {most} detections equal on the device ({source}) and the host"


STREAM_FIGURES = {  # gate: the optimal policy's figure, and the bound's direction
    "recall": ("recall", "min"),
    "precision": ("precision", "min"),
    "false_alarms_per_hour": ("false_alarms_per_hour", "max"),
    "unwanted_triggers_per_hour": ("unwanted_triggers_per_hour", "max"),
}


def _stream_gate(name: str, settings: dict, run: Run) -> Verdict:
    summary, source = run.stream_summary, device_source(run)
    if name == "agreement":
        share, counted = _detection_agreement(summary, source)
        return _judged(share >= settings["min"], f"{share:.4f}: {counted}")
    figure, bound = STREAM_FIGURES[name]
    optimal = summary.optimal
    if optimal is None:
        return _not_judged("the run was not scored (harness stream --ledger LEDGER)")
    value = getattr(optimal, figure)
    if value is None:
        return _not_judged("no events in the ledger" if figure == "recall" else "no detections")
    limit = settings[bound]
    passed = value >= limit if bound == "min" else value <= limit
    counts = {
        "recall": f"{optimal.hits} of {optimal.events} events",
        "precision": f"{optimal.hits} of {optimal.detections} detections",
        "false_alarms_per_hour": f"{optimal.false_alarms} false alarms",
        "unwanted_triggers_per_hour": f"{optimal.unwanted_triggers} unwanted triggers",
    }[name]
    exposure = f" in {optimal.duration_ms / 1000:g} s" if name.endswith("per_hour") else ""
    return _judged(passed, f"{value:.4f} ({counts}{exposure}; optimal policy, device ({source}) detections)")


def check_gates(
    run: Run, gates: dict, baseline: Run | None = None, strict: bool = False, *, subsets: Collection[str]
) -> list[GateResult]:
    """Every gate's result; `subsets`: the subsets the run's task has (harness/eval/subsets.py gate_subsets);
    `strict`: a gate not judged fails, and one with a subset of its own table not judged."""
    require_applicable(gates, run, baseline, subsets)
    judge = _stream_gate if run.kind == "stream" else lambda name, settings, r: _eval_gate(name, settings, r, baseline)
    return [_result(name, settings, judge(name, settings, run), strict) for name, settings in gates.items()]
