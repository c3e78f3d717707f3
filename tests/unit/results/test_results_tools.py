"""Run listing, comparison with significance, gates with JUnit, and the HTML report in a real browser."""

import json
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from tests.forked_cli import run_harness_command
from tests.model_surgery import swap_output_classes
from tests.report_browser import NEEDS_CHROMIUM, TEXT_PROBLEMS, browser_page


def _harness(*args, cwd=None):
    return run_harness_command([*args], cwd=cwd, env=os.environ.copy())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, vww_model):
    """Two runs of the default model on the virtual board, and one of the same model with its classes swapped."""
    folder = tmp_path_factory.mktemp("runs")
    swapped = folder / "vww_swapped.tflite"
    swapped.write_bytes(swap_output_classes(vww_model.read_bytes()))
    ids = {}
    for name, extra in (("base", []), ("again", []), ("swapped", ["--model-file", str(swapped)])):
        done = _harness("eval", "--subset", "all,distance_far", "--results", str(folder / "results"), "--quiet", *extra)
        assert done.returncode == 0, done.stderr
        ids[name] = os.path.basename(done.stdout.strip())
    return folder / "results", ids


@pytest.mark.slow
def test_runs_are_listed(runs):
    results, ids = runs
    listed = json.loads(_harness("runs", "list", "--results", str(results), "--json").stdout)
    assert [row["run_id"] for row in listed] == [ids["base"], ids["again"], ids["swapped"]]
    assert all(row["latency_source"] == "sim" for row in listed)


@pytest.mark.slow
def test_same_model_twice_is_not_a_significant_difference(runs):
    results, ids = runs
    done = _harness("runs", "compare", ids["base"], ids["again"], "--results", str(results), "--json")
    result = json.loads(done.stdout)
    assert result["prediction_flips"] == 0
    assert not result["significant"]
    assert all(s["mcnemar_p"] == 1.0 for s in result["subsets"].values())


@pytest.mark.slow
def test_perturbed_model_is_a_significant_difference(runs):
    results, ids = runs
    result = json.loads(
        _harness("runs", "compare", ids["base"], ids["swapped"], "--results", str(results), "--json").stdout
    )
    assert result["significant"]
    assert result["subsets"]["all"]["mcnemar_p"] < 0.05
    assert result["prediction_flips"] >= 0.9 * result["paired_samples"]  # inverted, but for exact ties
    text = _harness("runs", "compare", ids["base"], ids["swapped"], "--results", str(results)).stdout
    assert "SIGNIFICANT" in text and "McNemar" in text


@pytest.mark.slow
def test_gates_fail_a_degraded_run_and_write_junit(runs, tmp_path):
    results, ids = runs
    gates = tmp_path / "gates.toml"
    gates.write_text(
        "[agreement]\nmin = 0.99\n[accuracy_drop]\nmax = 0.01\n[accuracy_vs_baseline]\nmax_drop = 0.02\n"
        "[arena]\nmax_growth_bytes = 0\n"
    )
    junit = tmp_path / "junit.xml"
    good = _harness(
        "runs", "check", ids["again"], "--gates", str(gates), "--baseline", ids["base"], "--results", str(results)
    )
    assert good.returncode == 0, good.stdout
    bad = _harness(
        "runs",
        "check",
        ids["swapped"],
        "--gates",
        str(gates),
        "--baseline",
        ids["base"],
        "--results",
        str(results),
        "--junit",
        str(junit),
    )
    assert bad.returncode == 1
    assert "FAIL accuracy_vs_baseline" in bad.stdout
    suite = ET.parse(junit).getroot()
    cases = suite.findall("testcase")
    subsets = json.loads((results / ids["swapped"] / "summary.json").read_text())["subsets"]
    per_subset = [
        f"{gate}.{subset}" for gate in ("agreement", "accuracy_drop", "accuracy_vs_baseline") for subset in subsets
    ]
    assert [c.get("name") for c in cases] == [*per_subset, "arena"]  # a test case per gate and subset
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed and all(name.startswith("accuracy_vs_baseline.") for name in failed)
    assert suite.get("failures") == str(len(failed))


@pytest.mark.slow
def test_unknown_gate_is_a_clear_error(runs, tmp_path):
    results, ids = runs
    gates = tmp_path / "gates.toml"
    gates.write_text("[speed]\nmax = 1\n")
    done = _harness("runs", "check", ids["base"], "--gates", str(gates), "--results", str(results))
    assert done.returncode == 2 and "unknown gate" in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_report_renders_in_headless_chromium(runs, tmp_path):
    """The default model's runs (the report of the small model's is in test_report_pages.py)."""
    results, ids = runs
    out = tmp_path / "report.html"
    done = _harness("runs", "report", ids["base"], ids["swapped"], "--results", str(results), "--out", str(out))
    assert done.returncode == 0, done.stderr
    shot = tmp_path / "report.png"
    with browser_page() as (page, errors):
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        figures = page.eval_on_selector_all(
            "figure.plot", "fs => fs.map(f => !!f.querySelector('svg') || !!f.dataset.note)"
        )
        problems = page.evaluate(TEXT_PROBLEMS)
        assert "Leaderboard" in page.content()
        page.screenshot(path=str(shot), full_page=True)
    assert not errors
    assert not problems, "\n".join(problems)
    assert len(figures) == 16 and all(figures)  # seven per run, drawn or with a note saying why not; two of the pair
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.std() > 10  # not a blank page


def test_mcnemar_exact_and_bootstrap():
    from harness.results.compare import bootstrap_median_change
    from harness.results.comparison import mcnemar_exact

    a = np.array([True] * 20 + [False] * 5)
    b = np.array([False] * 10 + [True] * 10 + [False] * 5)
    only_a, only_b, p = mcnemar_exact(a, b)
    assert (only_a, only_b) == (10, 0) and p == pytest.approx(2 * 0.5**10)
    assert mcnemar_exact(a, a)[2] == 1.0
    change, low, high = bootstrap_median_change(np.full(50, 100.0), np.full(50, 110.0))
    assert change == pytest.approx(0.10) and low == pytest.approx(0.10) and high == pytest.approx(0.10)


def test_latency_significance_depends_on_the_source():
    from types import SimpleNamespace

    from harness.results.compare import compare_runs

    def run(source, values, run_id):
        samples = {
            "sample_id": [f"s{i}" for i in range(len(values))],
            "label": [1] * len(values),
            "device_prediction": [1] * len(values),
            "in_all": [True] * len(values),
            "microseconds": values if source != "emulated" else [None] * len(values),
            "instructions": values if source == "emulated" else [None] * len(values),
        }
        summary = {
            "subsets": {"all": {}},
            "latency": {"source": source},
            "arena": {"source": source, "used": 1000},
        }
        return SimpleNamespace(id=run_id, samples=samples, summary=summary)

    slow = [100.0 + i % 3 for i in range(60)]
    fast = [130.0 + i % 3 for i in range(60)]
    assert compare_runs(run("emulated", slow, "a"), run("emulated", fast, "b")).latency["significant"] is True
    assert compare_runs(run("device", slow, "a"), run("device", fast, "b")).latency["significant"] is True
    sim = compare_runs(run("sim", slow, "a"), run("sim", fast, "b"))
    assert sim.latency["significant"] is None and not sim.significant
    judged = compare_runs(run("sim", slow, "a"), run("sim", fast, "b"), latency_tolerance=0.1)
    assert judged.latency["significant"] is True
