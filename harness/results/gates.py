"""`harness check`: pass/fail gates over a run (and a baseline), with JUnit XML for lab CI."""

import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError
from harness.results.runs import Run

KNOWN_GATES = {
    "agreement": ("min",),
    "accuracy_drop": ("max",),
    "f1_drop": ("max",),
    "accuracy_vs_baseline": ("max_drop",),
    "latency": ("max_regression",),
    "arena": ("max_growth_bytes",),
    "flash": ("max_growth_bytes",),
}
BASELINE_GATES = {"accuracy_vs_baseline", "latency", "arena", "flash"}


@dataclass(frozen=True)
class GateResult:
    name: str
    passed: bool
    detail: str


def load_gates(path: Path) -> dict:
    try:
        gates = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"cannot read gates file {path} ({exc}); see docs/lab-ci.md for its format") from exc
    if not gates:
        raise UserError(f"gates file {path} has no gates; add at least one, e.g. [agreement] min = 0.99")
    valid = ", ".join(f"[{g}] {'/'.join(k)}" for g, k in KNOWN_GATES.items())
    for name, settings in gates.items():
        if name not in KNOWN_GATES or not isinstance(settings, dict) or set(settings) - set(KNOWN_GATES[name]):
            raise UserError(f"gates file {path}: unknown gate or setting [{name}]; valid: {valid}")
        for key in KNOWN_GATES[name]:
            if key not in settings:
                raise UserError(f"gates file {path}: [{name}] needs `{key} = NUMBER`")
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UserError(f"gates file {path}: [{name}] {key} must be a number, not {value!r}")
    return gates


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


def _empty_subsets(run: Run) -> dict[str, str]:
    return {subset: "n = 0" for subset, e in run.summary["subsets"].items() if not e["n"]}


def _drop(entry: dict, reference: str, metric: str) -> float | None:
    host, device = entry["host"][reference][metric], entry["device"][metric]
    return None if host is None or device is None else host - device


def _baseline_accuracy_drops(run: Run, baseline: Run) -> tuple[dict[str, float | None], dict[str, str]]:
    """Subsets present in both runs over the same data (equal subset_content_sha256)."""
    content = run.manifest["dataset"].get("subset_content_sha256") or {}
    baseline_content = baseline.manifest["dataset"].get("subset_content_sha256") or {}
    values, skipped = {}, {}
    for subset, entry in run.summary["subsets"].items():
        before = baseline.summary["subsets"].get(subset)
        if before is None:
            skipped[subset] = f"not in baseline {baseline.id}"
        elif content.get(subset) is None or content.get(subset) != baseline_content.get(subset):
            skipped[subset] = "different samples than in the baseline (subset_content_sha256)"
        elif entry["device"]["accuracy"] is None or before["device"]["accuracy"] is None:
            skipped[subset] = "n = 0"
        else:
            values[subset] = before["device"]["accuracy"] - entry["device"]["accuracy"]
    return values, skipped


LATENCY_UNITS = {"instructions": "instructions", "cycles": "cycles", "micros": "µs"}


def _latency(run: Run, baseline: Run, max_regression: float) -> GateResult:
    now, before = run.summary["latency"], baseline.summary["latency"]
    if now["source"] != before["source"]:
        return GateResult(
            "latency", False, f"not comparable: {now['source']} latency against the baseline's {before['source']}"
        )
    unit = next((u for u in LATENCY_UNITS if now.get(u) and before.get(u) and before[u]["median"]), None)
    if unit is None:
        return GateResult("latency", False, f"not comparable: no {now['source']} latency figure both runs have")
    median, median_before = now[unit]["median"], before[unit]["median"]
    change = median / median_before - 1
    detail = f"median {median_before:,.1f} -> {median:,.1f} {LATENCY_UNITS[unit]} ({now['source']}), {change:+.2%}"
    return GateResult("latency", change <= max_regression, detail)


def _arena(run: Run) -> tuple[int | None, str]:
    arena = run.summary["arena"]
    # Runs written before "not reported" was recorded as None hold 0 for it; no model runs in 0 bytes.
    return arena["used"] or None, f"{arena['source']} arena"


def _flash(run: Run) -> tuple[int | None, str]:
    firmware = run.manifest["device"].get("firmware") or {}
    if firmware.get("flash_bytes"):
        return firmware["flash_bytes"], "firmware image"
    return run.manifest["model"].get("bytes") or None, "model file"


def _growth(name: str, current: tuple[int | None, str], previous: tuple[int | None, str], limit: int) -> GateResult:
    (used, kind), (used_before, kind_before) = current, previous
    if used is None or used_before is None:
        which = "this run" if used is None else "the baseline"
        return GateResult(name, False, f"not comparable: {name} not reported by the DUT in {which}")
    if kind != kind_before:
        return GateResult(name, False, f"not comparable: {kind} bytes against the baseline's {kind_before} bytes")
    detail = f"{used_before:,} -> {used:,} bytes ({kind}), {used - used_before:+,}"
    return GateResult(name, used - used_before <= limit, detail)


def check_gates(run: Run, gates: dict, baseline: Run | None = None) -> list[GateResult]:
    reference = run.primary_reference
    results = []
    for name, settings in gates.items():
        if name in BASELINE_GATES and baseline is None:
            results.append(GateResult(name, False, "this gate compares with a baseline: pass --baseline RUN"))
        elif name in ("agreement", "accuracy_drop", "f1_drop") and reference is None:
            results.append(GateResult(name, False, "not evaluated: the run has no host reference (eval --references)"))
        elif name == "agreement":
            values = {subset: e["versus"][reference]["agreement"] for subset, e in run.summary["subsets"].items()}
            results.append(_per_subset(name, values, _empty_subsets(run), minimum=settings["min"]))
        elif name in ("accuracy_drop", "f1_drop"):
            metric = "accuracy" if name == "accuracy_drop" else "f1_wv"
            values = {subset: _drop(e, reference, metric) for subset, e in run.summary["subsets"].items()}
            skipped = _empty_subsets(run)
            if metric == "f1_wv":
                skipped |= {s: "no f1_wv: needs --pools" for s, v in values.items() if v is None and s not in skipped}
            results.append(_per_subset(name, values, skipped, maximum=settings["max"]))
        elif name == "accuracy_vs_baseline":
            values, skipped = _baseline_accuracy_drops(run, baseline)
            results.append(_per_subset(name, values, skipped, maximum=settings["max_drop"]))
        elif name == "latency":
            results.append(_latency(run, baseline, settings["max_regression"]))
        elif name == "arena":
            growth = _growth(name, _arena(run), _arena(baseline), settings["max_growth_bytes"])
            results.append(growth)
        else:
            results.append(_growth(name, _flash(run), _flash(baseline), settings["max_growth_bytes"]))
    return results


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
