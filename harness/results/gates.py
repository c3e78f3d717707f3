"""`harness check`: gates over a run (and a baseline), each passed, failed or not judged, with JUnit XML for
lab CI.

Eval runs are gated on absolute floors and ceilings (accuracy and F1 per subset, latency in ms, arena and
flash bytes), on agreement with the host reference and accuracy and F1 against the host, and on accuracy,
latency, arena and flash against a baseline; stream runs on the agreement of device and host detections and
on the optimal policy's recall, precision, false alarms and unwanted triggers per hour. A gate naming a
figure the run's kind does not have, or a `[gate.SUBSET]` table naming a subset the run's task has not, is
refused before any gate is judged. A gate whose figure the run (or the missing baseline) does not give is not
judged, and says why; `strict` fails it, and a gate beside whose judged subsets a subset of its own table
went unjudged. Every figure names its source: the device's (device, emulated or sim, as the run's board
is), the host reference's (host), the baseline's."""

import dataclasses
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from harness.errors import UserError
from harness.results.gates_file import BASELINE_GATES, GATES, bound_text, listed
from harness.results.record import EvalSummary, FirmwareBuild, Score, StreamSummary
from harness.results.runs import Run

Status = Literal["passed", "failed", "not judged"]


@dataclass(frozen=True)
class Verdict:
    """What a gate found: its figure (None when not judged) and a note (why not judged, what failed)."""

    status: Status
    figure: str | None
    note: str = ""
    unjudged: tuple[str, ...] = ()  # subsets with a bound of their own and no value (they fail under `strict`)


def _judged(passed: bool, figure: str, note: str = "") -> Verdict:
    return Verdict("passed" if passed else "failed", figure, note)


def _not_judged(why: str) -> Verdict:
    return Verdict("not judged", None, why)


@dataclass(frozen=True)
class GateResult:
    name: str
    status: Status
    figure: str  # the figure judged, with its unit and source ("n/a" when not judged)
    bound: str  # the gate's bounds as the gates file gives them
    detail: str  # one line: figure and bound, or why it was not judged

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
        }


def _result(name: str, settings: dict, verdict: Verdict, strict: bool) -> GateResult:
    bound = bound_text(name, settings)
    if verdict.figure is None:
        detail = f"not judged: {verdict.note}; {bound}"
        if strict:
            return GateResult(name, "failed", "n/a", bound, f"{detail} (--strict)")
        return GateResult(name, "not judged", "n/a", bound, detail)
    detail = f"{verdict.figure}; {bound}" + (f"; {verdict.note}" if verdict.note else "")
    if strict and verdict.unjudged:
        named = ", ".join(verdict.unjudged)
        own = "its" if len(verdict.unjudged) == 1 else "their"
        detail += f"; {named} not judged, yet bounded by {own} own table (--strict)"
        return GateResult(name, "failed", verdict.figure, bound, detail)
    return GateResult(name, verdict.status, verdict.figure, bound, detail)


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
    judged, failures, missing = [], [], {}
    for subset in names:
        value = values.get(subset)
        if value is None:
            missing[subset] = skipped.get(subset, "no value")
            continue
        bound = own.get(subset, every)
        judged.append(f"{subset} {value:.4f}" + (f" ({which[subset]})" if which and subset in which else ""))
        if (value < bound) if key == "min" else (value > bound):
            failures.append(subset)
    not_judged = "; ".join(f"{subset} ({why})" for subset, why in missing.items())
    if not judged:
        return _not_judged(not_judged or "the run has no subsets")
    notes = [f"{'under' if key == 'min' else 'over'} the bound: {', '.join(failures)}"] if failures else []
    notes += [f"not judged: {not_judged}"] if missing else []
    verdict = _judged(not failures, f"{source}: {', '.join(judged)}", "; ".join(notes))
    return dataclasses.replace(verdict, unjudged=tuple(subset for subset in missing if subset in own))


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


LATENCY_UNITS = {"instructions": "instructions", "cycles": "cycles", "micros": "µs"}
SOURCE_NOTES = {"sim": "sim: this machine's wall-clock time", "device": "device: the board's timer"}


def _latency_ms(settings: dict, summary: EvalSummary) -> Verdict:
    """The median and/or p90 latency in ms against ceilings, with the latency's source."""
    latency = summary.latency
    if latency.micros is None:
        has = "instructions (QEMU -icount)" if latency.instructions else "cycles" if latency.cycles else "none"
        return _not_judged(
            f"no latency in ms in this run ({latency.source} latency: {has}); gate it against a baseline with "
            "[latency] max_regression"
        )
    figures, failures = [], []
    for key, stat in (("max_median", "median"), ("max_p90", "p90")):
        ms = getattr(latency.micros, stat)
        if key not in settings:
            continue
        if ms is None:
            return _not_judged(f"the run's latency has no {stat} (a record of an earlier version)")
        figures.append(f"{stat} {ms / 1000:,.3f} ms")
        failures += [stat] if ms / 1000 > settings[key] else []
    figure = f"{', '.join(figures)} ({SOURCE_NOTES.get(latency.source, latency.source)})"
    return _judged(not failures, figure, f"over the bound: {', '.join(failures)}" if failures else "")


def _latency(run: Run, baseline: Run, max_regression: float) -> Verdict:
    now, before = run.eval_summary.latency, baseline.eval_summary.latency
    if now.source != before.source:
        return _not_judged(f"not comparable: {now.source} latency against the baseline's {before.source}")
    figures = [(unit, getattr(now, unit), getattr(before, unit)) for unit in LATENCY_UNITS]
    both = next(((u, a, b) for u, a, b in figures if a and b and b.median), None)
    if both is None:
        return _not_judged(f"not comparable: no {now.source} latency figure both runs have")
    unit, current, previous = both
    change = current.median / previous.median - 1
    figure = (
        f"median {previous.median:,.1f} -> {current.median:,.1f} {LATENCY_UNITS[unit]} ({now.source}), {change:+.2%}"
    )
    return _judged(change <= max_regression, figure)


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


def _eval_gate(name: str, settings: dict, run: Run, baseline: Run | None) -> Verdict:
    summary = run.eval_summary
    reference = summary.primary_reference
    if name in BASELINE_GATES and baseline is None:
        return _not_judged("this gate compares with a baseline: pass --baseline RUN")
    if name in ("agreement", "accuracy_drop", "f1_drop") and reference is None:
        return _not_judged("the run has no host reference (eval --references)")
    device = f"device ({device_source(run)})"
    if name in ("accuracy", "f1"):
        return _absolute(name, settings, run)
    if name == "agreement":
        values = {subset: e.versus[reference].agreement for subset, e in summary.subsets.items()}
        source = f"agreement of the {device} with host reference {reference} (host)"
        return _per_subset(settings, "min", values, _empty_subsets(summary), source)
    if name in ("accuracy_drop", "f1_drop"):
        metric = "accuracy" if name == "accuracy_drop" else "f1_wv"
        source = (
            f"{'accuracy' if name == 'accuracy_drop' else 'F1wv'} of host reference {reference} (host) minus {device}"
        )
        values = _drops(summary, reference, metric)
        skipped = _empty_subsets(summary)
        if metric == "f1_wv":
            skipped |= {
                s: f"no f1_wv: {summary.subsets[s].device.f1_unavailable or 'needs --pools'}"
                for s, v in values.items()
                if v is None and s not in skipped
            }
        return _per_subset(settings, "max", values, skipped, source)
    if name == "accuracy_vs_baseline":
        values, skipped = _baseline_accuracy_drops(run, baseline)
        source = f"accuracy of baseline {baseline.id} device ({device_source(baseline)}) minus this run's {device}"
        return _per_subset(settings, "max_drop", values, skipped, source)
    if name.startswith("auc"):
        return _auc_gate(name, settings, run, baseline)
    if name == "latency_ms":
        return _latency_ms(settings, summary)
    if name == "latency":
        return _latency(run, baseline, settings["max_regression"])
    if name in ("arena_bytes", "flash_bytes"):
        measure = _arena if name == "arena_bytes" else _flash
        return _ceiling(name.removesuffix("_bytes"), measure(run), settings["max"])
    measure = _arena if name == "arena" else _flash
    return _growth(name, measure(run), measure(baseline), settings["max_growth_bytes"])


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


def junit_xml(run: Run, results: list[GateResult]) -> str:
    """One test case per gate, its figure and bound as properties; a gate not judged is skipped, with why."""
    suite = ET.Element(
        "testsuite",
        name=f"harness check {run.id}",
        tests=str(len(results)),
        failures=str(sum(r.status == "failed" for r in results)),
        skipped=str(sum(r.status == "not judged" for r in results)),
    )
    for result in results:
        case = ET.SubElement(suite, "testcase", classname=f"harness.gates.{run.board}.{run.model}", name=result.name)
        properties = ET.SubElement(case, "properties")
        for key in ("figure", "bound"):
            ET.SubElement(properties, "property", name=key, value=getattr(result, key))
        if result.status == "failed":
            ET.SubElement(case, "failure", message=result.detail).text = result.detail
        elif result.status == "not judged":
            ET.SubElement(case, "skipped", message=result.detail)
        ET.SubElement(case, "system-out").text = result.detail
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)
