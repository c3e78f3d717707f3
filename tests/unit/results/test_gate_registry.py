"""The gate kinds' one registry (harness/results/gates_file.py GATES): each gate kind is one `Gate` carrying
its bounds and its judge for each kind of run, so a new gate kind is a judge and one entry, and gates.py
judges it without knowing its name."""

import inspect
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.eval.subsets import gate_subsets
from harness.results import gates_file
from harness.results.gate_spec import AT_LEAST_0, Gate
from harness.results.gates import check_gates
from harness.results.gates_file import GATES, load_gates
from harness.results.runs import Run
from harness.results.verdicts import Verdict, judged, not_judged

ROOT = Path(__file__).resolve().parents[3]
RUN_KINDS = {"eval", "anomaly", "stream"}  # harness/results/gates.py gate_kind


@pytest.mark.parametrize("name", GATES)
def test_every_gate_has_a_judge_for_each_kind_of_run_it_lists(name):
    gate = GATES[name]
    assert gate.kinds and set(gate.kinds) <= RUN_KINDS, gate.kinds
    for kind in gate.kinds:
        judge = gate.judges[kind]
        assert callable(judge) and judge.__module__.startswith("harness.results."), (kind, judge)
        inspect.signature(judge).bind({}, None, None)  # (settings, run, baseline)
    assert f"`{name}`" in (ROOT / "docs/lab-ci.md").read_text() or f"[{name}]" in (ROOT / "docs/lab-ci.md").read_text()


def samples_evaluated(settings: dict, run: Run, baseline: Run | None) -> Verdict:
    """A gate kind from outside the package: the samples the run evaluated against a floor."""
    n = sum(entry.n for entry in run.eval_summary.subsets.values())
    if not n:
        return not_judged("no samples evaluated")
    return judged(n >= settings["min"], f"{n} samples")


def _run(n: int, anomaly: dict | None = None) -> Run:
    manifest = {"run_id": "run", "started": "2025-01-01T00:00:00", "model": {"card": "vww"}, "board": {"id": "sim"}}
    entry = {"n": n, "device": {"accuracy": 0.9 if n else None}, "host": {}, "versus": {}}
    summary = {
        "subsets": {"all": entry},
        "samples": n,
        "latency": {"source": "sim", "micros": {"median": 6000.0}},
        "arena": {"source": "sim", "used": None},
        "anomaly": anomaly,
    }
    return Run(Path("run"), manifest, summary)


@pytest.fixture
def with_samples_gate(monkeypatch):
    registry = dict(GATES)
    registry["samples"] = Gate(("min",), {"eval": samples_evaluated}, range=AT_LEAST_0)
    monkeypatch.setattr(gates_file, "GATES", registry)
    monkeypatch.setattr("harness.results.gates.GATES", registry)


def test_a_new_gate_kind_is_one_entry_read_from_a_gates_file_and_judged(tmp_path, with_samples_gate):
    path = tmp_path / "gates.toml"
    path.write_text("[samples]\nmin = 20\n\n[accuracy]\nmin = 0.5\n")
    gates = load_gates(path)

    def check(n: int):
        return check_gates(_run(n), gates, subsets=gate_subsets(_run(n)))

    samples, accuracy = check(10)
    assert (samples.name, samples.status, samples.detail) == ("samples", "failed", "10 samples; min 20")
    assert accuracy.passed
    assert check(30)[0].passed
    assert check(0)[0].status == "not judged" and "no samples evaluated" in check(0)[0].detail
    assert "[samples] min" in gates_file.listed("eval") and "[samples]" not in gates_file.listed("stream")


def test_a_new_gate_kind_is_checked_and_refused_where_its_run_kind_has_no_judge(tmp_path, with_samples_gate):
    path = tmp_path / "gates.toml"
    path.write_text("[samples]\nmin = -1\n")
    with pytest.raises(UserError, match=r"\[samples\] min = -1 is out of range; it must be at least 0"):
        load_gates(path)
    score = {"files": 4, "anomalous_files": 2, "windows": 8, "auc": 0.9, "top1_percent": 90.0}
    anomaly = _run(8, anomaly={"device": score, "host": {}})
    with pytest.raises(UserError, match=r"gate \[samples\] judges a figure anomaly runs do not have"):
        check_gates(anomaly, {"samples": {"min": 1}}, subsets=gate_subsets(anomaly))
