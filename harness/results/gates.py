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
    for name, settings in gates.items():
        if name not in KNOWN_GATES or not isinstance(settings, dict) or set(settings) - set(KNOWN_GATES[name]):
            valid = ", ".join(f"[{g}] {'/'.join(k)}" for g, k in KNOWN_GATES.items())
            raise UserError(f"gates file {path}: unknown gate or setting [{name}]; valid: {valid}")
    return gates


def _per_subset(run: Run, name: str, values: dict[str, float | None], minimum=None, maximum=None) -> GateResult:
    failures = [
        f"{subset}: {value:.4f}"
        for subset, value in values.items()
        if value is not None
        and ((minimum is not None and value < minimum) or (maximum is not None and value > maximum))
    ]
    return GateResult(name, not failures, "; ".join(failures) or "every subset within the limit")


def _drop(entry: dict, reference: str, metric: str) -> float | None:
    host, device = entry["host"][reference][metric], entry["device"][metric]
    return None if host is None or device is None else host - device


def _median(run: Run) -> float | None:
    latency = run.summary["latency"]
    figures = latency.get("instructions") or latency.get("cycles") or latency.get("micros")
    return figures["median"] if figures else None


def _flash(run: Run) -> int:
    firmware = run.manifest["device"].get("firmware") or {}
    return firmware.get("flash_bytes") or run.manifest["model"].get("bytes", 0)


def check_gates(run: Run, gates: dict, baseline: Run | None = None) -> list[GateResult]:
    reference = run.primary_reference
    results = []
    for name, settings in gates.items():
        if name in BASELINE_GATES and baseline is None:
            results.append(GateResult(name, False, "this gate compares with a baseline: pass --baseline RUN"))
        elif name == "agreement":
            values = {subset: e["versus"][reference]["agreement"] for subset, e in run.summary["subsets"].items()}
            results.append(_per_subset(run, name, values, minimum=settings["min"]))
        elif name in ("accuracy_drop", "f1_drop"):
            metric = "accuracy" if name == "accuracy_drop" else "f1_wv"
            values = {subset: _drop(e, reference, metric) for subset, e in run.summary["subsets"].items()}
            results.append(_per_subset(run, name, values, maximum=settings["max"]))
        elif name == "accuracy_vs_baseline":
            values = {
                subset: baseline.summary["subsets"][subset]["device"]["accuracy"] - e["device"]["accuracy"]
                for subset, e in run.summary["subsets"].items()
                if subset in baseline.summary["subsets"]
                and e["device"]["accuracy"] is not None
                and baseline.summary["subsets"][subset]["device"]["accuracy"] is not None
            }
            results.append(_per_subset(run, name, values, maximum=settings["max_drop"]))
        elif name == "latency":
            now, before = _median(run), _median(baseline)
            change = now / before - 1 if now and before else None
            ok = change is not None and change <= settings["max_regression"]
            detail = f"median {before} -> {now} ({change:+.2%})" if change is not None else "no comparable latency"
            results.append(GateResult(name, ok, detail))
        else:
            current, previous = (
                (run.summary["arena"]["used"], baseline.summary["arena"]["used"])
                if name == "arena"
                else (_flash(run), _flash(baseline))
            )
            growth = current - previous
            results.append(GateResult(name, growth <= settings["max_growth_bytes"], f"{previous} -> {current} bytes"))
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
