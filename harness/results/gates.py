"""`harness check`: pass/fail gates over a run (and a baseline), with JUnit XML for lab CI.

Eval runs are gated on agreement with the host reference, accuracy and F1 against the host, accuracy,
latency, arena and flash against a baseline; stream runs on the agreement of device and host detections
and on the optimal policy's recall, precision, false alarms and unwanted triggers per hour. A gate naming a
figure the run's kind does not have is refused before any gate is judged."""

import math
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError
from harness.results.record import EvalSummary, FirmwareBuild, StreamSummary
from harness.results.runs import Run


@dataclass(frozen=True)
class Gate:
    settings: tuple[str, ...]
    kinds: tuple[str, ...]  # the kinds of run that have the gate's figure
    baseline: bool = False  # compares with a baseline run


# Kinds: eval (samples given a class), anomaly (eval runs of anomaly scores: AUC over files), stream.
GATES = {
    "agreement": Gate(("min",), ("eval", "stream")),
    "accuracy_drop": Gate(("max",), ("eval",)),
    "f1_drop": Gate(("max",), ("eval",)),
    "accuracy_vs_baseline": Gate(("max_drop",), ("eval",), baseline=True),
    "auc": Gate(("min",), ("anomaly",)),
    "auc_drop": Gate(("max",), ("anomaly",)),
    "auc_vs_baseline": Gate(("max_drop",), ("anomaly",), baseline=True),
    "latency": Gate(("max_regression",), ("eval", "anomaly"), baseline=True),
    "arena": Gate(("max_growth_bytes",), ("eval", "anomaly"), baseline=True),
    "flash": Gate(("max_growth_bytes",), ("eval", "anomaly"), baseline=True),
    "recall": Gate(("min",), ("stream",)),
    "precision": Gate(("min",), ("stream",)),
    "false_alarms_per_hour": Gate(("max",), ("stream",)),
    "unwanted_triggers_per_hour": Gate(("max",), ("stream",)),
}
BASELINE_GATES = {name for name, gate in GATES.items() if gate.baseline}


@dataclass(frozen=True)
class GateResult:
    name: str
    passed: bool
    detail: str


def _listed(kind: str | None = None) -> str:
    return ", ".join(
        f"[{name}] {'/'.join(gate.settings)}" for name, gate in GATES.items() if kind is None or kind in gate.kinds
    )


def load_gates(path: Path) -> dict:
    try:
        gates = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"cannot read gates file {path} ({exc}); see docs/lab-ci.md for its format") from exc
    if not gates:
        raise UserError(f"gates file {path} has no gates; add at least one, e.g. [agreement] min = 0.99")
    for name, settings in gates.items():
        if name not in GATES or not isinstance(settings, dict):
            raise UserError(f"gates file {path}: unknown gate [{name}]; valid: {_listed()}")
        if unknown := sorted(set(settings) - set(GATES[name].settings)):
            raise UserError(
                f"gates file {path}: [{name}] has no setting {', '.join(unknown)}; "
                f"it takes {', '.join(GATES[name].settings)}"
            )
        for key in GATES[name].settings:
            if key not in settings:
                raise UserError(f"gates file {path}: [{name}] needs `{key} = NUMBER`")
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UserError(f"gates file {path}: [{name}] {key} must be a number, not {value!r}")
            if not math.isfinite(value):
                raise UserError(
                    f"gates file {path}: [{name}] {key} must be a finite number, not {value}; a bound of {value} "
                    "judges nothing"
                )
    return gates


def gate_kind(run: Run) -> str:
    """The run's kind as the gates see it: an eval run of anomaly scores has AUC, not accuracies."""
    if run.kind == "eval" and run.eval_summary.anomaly is not None:
        return "anomaly"
    return run.kind


def require_applicable(gates: dict, run: Run, baseline: Run | None = None) -> None:
    """Every gate must judge a figure the run has, and a baseline must be a run of the same kind."""
    kind = gate_kind(run)
    for name in gates:
        if kind not in GATES[name].kinds:
            raise UserError(
                f"gate [{name}] judges a figure {kind} runs do not have ({run.id} is {_a(kind)} run); "
                f"gates for {kind} runs: {_listed(kind)}"
            )
    if baseline is not None and gate_kind(baseline) != kind:
        raise UserError(
            f"baseline {baseline.id} is {_a(gate_kind(baseline))} run, {run.id} {_a(kind)} run: "
            "gate against a run of the same kind"
        )


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _per_subset(
    name: str, values: dict[str, float | None], skipped: dict[str, str], minimum=None, maximum=None
) -> GateResult:
    """Judges the subsets with a value; `skipped` names those without one and why. With no value at all
    the gate fails: nothing was checked."""
    skipped = {subset: "no value" for subset, value in values.items() if value is None} | skipped
    judged = {subset: value for subset, value in values.items() if value is not None}
    not_evaluated = "not evaluated: " + "; ".join(f"{subset} ({why})" for subset, why in skipped.items())
    if not judged:
        return GateResult(name, False, not_evaluated if skipped else "not evaluated: the run has no subsets")
    failures = [
        f"{subset}: {value:.4f}"
        for subset, value in judged.items()
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum)
    ]
    detail = "; ".join(failures) or "every evaluated subset within the limit"
    return GateResult(name, not failures, f"{detail}; {not_evaluated}" if skipped else detail)


def _empty_subsets(summary: EvalSummary) -> dict[str, str]:
    return {subset: "n = 0" for subset, e in summary.subsets.items() if not e.n}


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


LATENCY_UNITS = {"instructions": "instructions", "cycles": "cycles", "micros": "µs"}


def _latency(run: Run, baseline: Run, max_regression: float) -> GateResult:
    now, before = run.eval_summary.latency, baseline.eval_summary.latency
    if now.source != before.source:
        return GateResult(
            "latency", False, f"not comparable: {now.source} latency against the baseline's {before.source}"
        )
    figures = [(unit, getattr(now, unit), getattr(before, unit)) for unit in LATENCY_UNITS]
    both = next(((u, a, b) for u, a, b in figures if a and b and b.median), None)
    if both is None:
        return GateResult("latency", False, f"not comparable: no {now.source} latency figure both runs have")
    unit, current, previous = both
    change = current.median / previous.median - 1
    detail = (
        f"median {previous.median:,.1f} -> {current.median:,.1f} {LATENCY_UNITS[unit]} ({now.source}), {change:+.2%}"
    )
    return GateResult("latency", change <= max_regression, detail)


def _arena(run: Run) -> tuple[int | None, str]:
    arena = run.eval_summary.arena  # "not reported" is None (runs of earlier versions stored 0)
    return arena.used, f"{arena.source} arena"


def _flash(run: Run) -> tuple[int | None, str]:
    manifest = run.record.manifest
    firmware = manifest.device.firmware or FirmwareBuild()
    if firmware.flash_bytes:
        return firmware.flash_bytes, "firmware image"
    return manifest.model.bytes or None, "model file"


def _growth(name: str, current: tuple[int | None, str], previous: tuple[int | None, str], limit: int) -> GateResult:
    (used, kind), (used_before, kind_before) = current, previous
    if used is None or used_before is None:
        which = "this run" if used is None else "the baseline"
        return GateResult(name, False, f"not comparable: {name} not reported by the DUT in {which}")
    if kind != kind_before:
        return GateResult(name, False, f"not comparable: {kind} bytes against the baseline's {kind_before} bytes")
    detail = f"{used_before:,} -> {used:,} bytes ({kind}), {used - used_before:+,}"
    return GateResult(name, used - used_before <= limit, detail)


ONE_CLASS = "not evaluated: no AUC (the files evaluated hold one class only)"


def _auc_gate(name: str, settings: dict, summary: EvalSummary, baseline: Run | None) -> GateResult:
    """The device's AUC over files: a floor (auc), or how far under the primary host's (auc_drop) or the
    baseline's (auc_vs_baseline) it is."""
    device = summary.anomaly.device.auc
    if name == "auc":
        if device is None:
            return GateResult(name, False, ONE_CLASS)
        return GateResult(name, device >= settings["min"], f"device AUC {device:.4f}; min {settings['min']}")
    if name == "auc_drop":
        host = summary.anomaly.host.get(summary.primary_reference or "")
        if host is None:
            return GateResult(name, False, "not evaluated: the run has no host reference (eval --references)")
        other, what, bound = host.auc, f"{summary.primary_reference} AUC", settings["max"]
    else:
        other, what, bound = baseline.eval_summary.anomaly.device.auc, "baseline AUC", settings["max_drop"]
    if device is None or other is None:
        return GateResult(name, False, ONE_CLASS)
    drop = other - device
    return GateResult(name, drop <= bound, f"{what} {other:.4f} - device {device:.4f} = {drop:+.4f}; max {bound}")


def _eval_gate(name: str, settings: dict, run: Run, baseline: Run | None) -> GateResult:
    summary = run.eval_summary
    reference = summary.primary_reference
    if name in BASELINE_GATES and baseline is None:
        return GateResult(name, False, "this gate compares with a baseline: pass --baseline RUN")
    if name in ("agreement", "accuracy_drop", "f1_drop") and reference is None:
        return GateResult(name, False, "not evaluated: the run has no host reference (eval --references)")
    if name == "agreement":
        values = {subset: e.versus[reference].agreement for subset, e in summary.subsets.items()}
        return _per_subset(name, values, _empty_subsets(summary), minimum=settings["min"])
    if name in ("accuracy_drop", "f1_drop"):
        metric = "accuracy" if name == "accuracy_drop" else "f1_wv"
        values = _drops(summary, reference, metric)
        skipped = _empty_subsets(summary)
        if metric == "f1_wv":
            skipped |= {
                s: f"no f1_wv: {summary.subsets[s].device.f1_unavailable or 'needs --pools'}"
                for s, v in values.items()
                if v is None and s not in skipped
            }
        return _per_subset(name, values, skipped, maximum=settings["max"])
    if name == "accuracy_vs_baseline":
        values, skipped = _baseline_accuracy_drops(run, baseline)
        return _per_subset(name, values, skipped, maximum=settings["max_drop"])
    if name.startswith("auc"):
        return _auc_gate(name, settings, summary, baseline)
    if name == "latency":
        return _latency(run, baseline, settings["max_regression"])
    if name == "arena":
        return _growth(name, _arena(run), _arena(baseline), settings["max_growth_bytes"])
    return _growth(name, _flash(run), _flash(baseline), settings["max_growth_bytes"])


def _detection_agreement(summary: StreamSummary) -> tuple[float, str]:
    """The share of detections device and host both made (label, time and score equal)."""
    device, host = Counter(summary.detections.device), Counter(summary.detections.host)
    common, most = sum((device & host).values()), max(sum(device.values()), sum(host.values()))
    share = common / most if most else 1.0
    return share, f"{common} of {most} detections equal on device and host"


STREAM_FIGURES = {  # gate: the optimal policy's figure, and the bound's direction
    "recall": ("recall", "min"),
    "precision": ("precision", "min"),
    "false_alarms_per_hour": ("false_alarms_per_hour", "max"),
    "unwanted_triggers_per_hour": ("unwanted_triggers_per_hour", "max"),
}


def _stream_gate(name: str, settings: dict, run: Run) -> GateResult:
    summary = run.stream_summary
    if name == "agreement":
        share, counted = _detection_agreement(summary)
        return GateResult(name, share >= settings["min"], f"{share:.4f}: {counted}")
    figure, bound = STREAM_FIGURES[name]
    optimal = summary.optimal
    if optimal is None:
        return GateResult(name, False, "not evaluated: the run was not scored (harness stream --ledger LEDGER)")
    value = getattr(optimal, figure)
    if value is None:
        why = "no events in the ledger" if figure == "recall" else "no detections"
        return GateResult(name, False, f"not evaluated: {why}")
    limit = settings[bound]
    passed = value >= limit if bound == "min" else value <= limit
    counts = {
        "recall": f"{optimal.hits} of {optimal.events} events",
        "precision": f"{optimal.hits} of {optimal.detections} detections",
        "false_alarms_per_hour": f"{optimal.false_alarms} false alarms",
        "unwanted_triggers_per_hour": f"{optimal.unwanted_triggers} unwanted triggers",
    }[name]
    exposure = f" in {optimal.duration_ms / 1000:g} s" if name.endswith("per_hour") else ""
    return GateResult(name, passed, f"{value:.4f} ({counts}{exposure}; optimal policy); {bound} {limit}")


def check_gates(run: Run, gates: dict, baseline: Run | None = None) -> list[GateResult]:
    require_applicable(gates, run, baseline)
    if run.kind == "stream":
        return [_stream_gate(name, settings, run) for name, settings in gates.items()]
    return [_eval_gate(name, settings, run, baseline) for name, settings in gates.items()]


def junit_xml(run: Run, results: list[GateResult]) -> str:
    suite = ET.Element(
        "testsuite",
        name=f"harness check {run.id}",
        tests=str(len(results)),
        failures=str(sum(not r.passed for r in results)),
    )
    for result in results:
        case = ET.SubElement(suite, "testcase", classname=f"harness.gates.{run.board}.{run.model}", name=result.name)
        if not result.passed:
            ET.SubElement(case, "failure", message=result.detail).text = result.detail
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)
