"""Gates and compare on crafted run folders: a gate that cannot be judged fails and says why, figures of
different units or sources are not compared, and a bad gates file is one clear line."""

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.errors import UserError
from harness.eval.subsets import gate_subsets
from harness.results.gates import check_gates
from harness.results.gates_file import load_gates
from harness.results.junit import junit_xml
from harness.results.report import arena_line
from harness.results.runs import Run, load_run
from tests.forked_cli import run_harness_command


def _entry(n=10, accuracy=0.9, host_accuracy=0.9, f1_wv=None, agreement=1.0, f1_counts=None, pool_incomplete=None):
    return {
        "n": n,
        "device": {
            "accuracy": accuracy if n else None,
            "f1_wv": f1_wv,
            "f1_counts": f1_counts,
            "pool_incomplete": pool_incomplete,
        },
        "host": {"tflm": {"accuracy": host_accuracy if n else None, "f1_wv": f1_wv}},
        "versus": {"tflm": {"agreement": agreement if n else None, "max_diff_steps": 0.0}},
    }


def _latency(source="sim", micros=6000.0, instructions=None, p90=None, cycles=None):
    return {
        "source": source,
        "micros": {"median": micros, "p90": p90} if micros else None,
        "cycles": {"median": cycles, "p90": cycles} if cycles else None,
        "instructions": {"median": instructions, "p90": instructions} if instructions else None,
    }


def _run(
    run_id="run",
    subsets=None,
    content=None,
    reference="tflm",
    latency=None,
    arena_used=168_368,
    arena_source="sim",
    firmware=None,
    anomaly=None,
) -> Run:
    subsets = subsets if subsets is not None else {"all": _entry()}
    manifest = {
        "run_id": run_id,
        "started": "2025-01-01T00:00:00",
        "model": {"card": "vww", "bytes": 300_000},
        "board": {"id": "sim"},
        "device": {"firmware": firmware},
        "dataset": {"subset_content_sha256": content or {name: "same" for name in subsets}},
    }
    summary = {
        "subsets": subsets,
        "samples": 10,
        "primary_reference": reference,
        "latency": latency or _latency(),
        "arena": {"source": arena_source, "configured": 1 << 20 if arena_used else None, "used": arena_used},
        "anomaly": anomaly,
    }
    return Run(Path(run_id), manifest, summary)


def _anomaly_run(run_id="ad", device_auc=0.9, host_auc=0.9):
    def score(auc):
        return {"files": 4, "anomalous_files": 2, "windows": 8, "auc": auc, "top1_percent": 90.0 if auc else None}

    entry = {"n": 8, "device": {}, "host": {"tflm": {}}, "versus": {"tflm": {"max_diff_steps": 0.0}}}
    anomaly = {"device": score(device_auc), "host": {"tflm": score(host_auc)}}
    return _run(run_id, subsets={"all": entry}, anomaly=anomaly)


def _check(run, gates, baseline=None, strict=False):
    """As `harness runs check` judges: with the subsets the run's task has."""
    return check_gates(run, gates, baseline, strict, subsets=gate_subsets(run))


def _only(results):
    (result,) = results
    return result


def test_f1_drop_without_any_f1wv_is_not_judged_naming_the_subsets():
    run = _run(subsets={"distance_far": _entry(), "lighting_dark": _entry()})
    result = _only(_check(run, {"f1_drop": {"max": 0.0}}))
    assert result.status == "not judged"
    assert "distance_far" in result.detail and "lighting_dark" in result.detail


@pytest.mark.parametrize("gate", [{"agreement": {"min": 0.99}}, {"accuracy_drop": {"max": 0.01}}])
def test_gates_over_empty_subsets_are_not_judged(gate):
    result = _only(_check(_run(subsets={"distance_far": _entry(n=0)}), gate))
    assert result.status == "not judged" and "distance_far (n = 0)" in result.detail


def test_an_empty_subset_beside_a_judged_one_is_named_but_does_not_fail():
    run = _run(subsets={"all": _entry(), "silence": _entry(n=0)})
    result = _only(_check(run, {"agreement": {"min": 0.99}}))
    assert result.passed and "silence (n = 0)" in result.detail


@pytest.mark.parametrize("gate", ["agreement", "accuracy_drop", "f1_drop"])
def test_a_run_without_host_reference_fails_the_reference_gates(gate):
    result = _only(_check(_run(reference=None), {gate: dict.fromkeys(("min", "max"), 0.0)}))
    assert not result.passed and "no host reference" in result.detail


def test_accuracy_vs_baseline_needs_a_common_subset_over_the_same_samples():
    gates = {"accuracy_vs_baseline": {"max_drop": 0.0}}
    run = _run(subsets={"distance_far": _entry(accuracy=0.5)})
    disjoint = _run("base", subsets={"lighting_bright": _entry()})
    result = _only(_check(run, gates, disjoint))
    assert not result.passed and "distance_far (not in baseline base)" in result.detail

    other_data = _run("base", subsets={"distance_far": _entry(accuracy=0.5)}, content={"distance_far": "other"})
    result = _only(_check(run, gates, other_data))
    assert not result.passed and "different samples" in result.detail

    same_data = _run("base", subsets={"distance_far": _entry(accuracy=0.5)})
    assert _only(_check(run, gates, same_data)).passed


def test_latency_of_different_sources_is_not_comparable():
    emulated = _run("qemu", latency=_latency("emulated", micros=None, instructions=9.2e6))
    sim = _run("sim", latency=_latency("sim", micros=5953.2))
    for run, baseline in ((emulated, sim), (sim, emulated)):
        result = _only(_check(run, {"latency": {"max_regression": 0.05}}, baseline))
        assert not result.passed and "not comparable" in result.detail


def test_latency_uses_one_unit_for_both_runs_and_names_it():
    run = _run(latency=_latency("device", micros=1000.0, cycles=480_000))
    baseline = _run("base", latency=_latency("device", micros=1000.0))
    result = _only(_check(run, {"latency": {"max_regression": 0.0}}, baseline))
    assert result.passed, result.detail
    assert "µs" in result.detail and "device" in result.detail


@pytest.mark.parametrize("unreported", [None, 0])
def test_arena_not_reported_is_not_comparable(unreported):
    measured, dut = _run("harness"), _run("eembc", arena_used=unreported)
    for run, baseline in ((dut, measured), (measured, dut)):
        result = _only(_check(run, {"arena": {"max_growth_bytes": 0}}, baseline))
        assert not result.passed and "not reported by the DUT" in result.detail
    assert arena_line(dut.summary["arena"]) == "arena: not reported by the DUT"


def test_arena_of_different_sources_is_not_comparable():
    result = _only(_check(_run(arena_source="device"), {"arena": {"max_growth_bytes": 1 << 20}}, _run("sim")))
    assert not result.passed and "device arena bytes against the baseline's sim arena" in result.detail


def test_flash_of_a_firmware_image_and_of_a_model_file_are_not_comparable():
    built, sim = _run("qemu", firmware={"flash_bytes": 400_000}), _run("sim")
    result = _only(_check(built, {"flash": {"max_growth_bytes": 1 << 20}}, sim))
    assert not result.passed and "not comparable" in result.detail and "firmware image" in result.detail


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "has no gates"),
        ("[agreement]\n", "needs `min = NUMBER`"),
        ('[agreement]\nmin = "0.99"\n', "must be a number"),
        ("[arena]\nmax_growth_bytes = true\n", "must be a number"),
    ],
)
def test_malformed_gates_file_is_a_user_error(tmp_path, text, problem):
    gates = tmp_path / "gates.toml"
    gates.write_text(text)
    with pytest.raises(UserError, match=problem):
        load_gates(gates)


def _write_run(root: Path, run: Run, samples: dict) -> str:
    folder = root / run.id
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(run.manifest))
    (folder / "summary.json").write_text(json.dumps(run.summary))
    pq.write_table(pa.table(samples), folder / "samples.parquet")
    return run.id


def _samples(ids, microseconds):
    return {
        "sample_id": ids,
        "label": [1] * len(ids),
        "device_prediction": [1] * len(ids),
        "in_all": [True] * len(ids),
        "in_distance_far": [False] * len(ids),
        "microseconds": [microseconds] * len(ids),
    }


def _harness(*args):
    return run_harness_command([*args], env=os.environ.copy())


@pytest.fixture
def device_and_sim_runs(tmp_path):
    subsets = {"all": _entry(), "distance_far": _entry(n=0)}
    device = _run("device-run", subsets=subsets, latency=_latency("device", micros=5953.2), arena_source="device")
    sim = _run("sim-run", subsets=subsets, latency=_latency("sim", micros=6815.5), arena_used=None)
    ids = [f"s{i}" for i in range(10)]  # as many rows as the subsets score
    _write_run(tmp_path, device, _samples(ids, 5953.2))
    _write_run(tmp_path, sim, _samples(ids, 6815.5))
    return tmp_path, device.id, sim.id


def test_compare_latency_of_different_sources_is_not_judged(device_and_sim_runs):
    from harness.results.compare import compare_runs

    root, a, b = device_and_sim_runs
    result = compare_runs(load_run(a, root), load_run(b, root), latency_tolerance=0.01)
    latency = result.latency
    assert (latency["source_a"], latency["source_b"]) == ("device", "sim")
    assert latency["significant"] is None and "not comparable" in latency["note"]
    assert result.arena["used_delta"] is None and not result.significant


@pytest.mark.slow
def test_compare_prints_a_subset_without_pairs_and_both_sources(device_and_sim_runs):
    root, a, b = device_and_sim_runs
    done = _harness("runs", "compare", a, b, "--results", str(root))
    assert done.returncode == 0, done.stderr
    assert "distance_far: accuracy n/a" in done.stdout
    assert "device → sim" in done.stdout and "not comparable" in done.stdout
    assert "arena used: not comparable: arena not reported by the DUT" in done.stdout


@pytest.mark.slow
def test_junit_to_an_unwritable_place_is_one_line(device_and_sim_runs):
    root, a, _ = device_and_sim_runs
    gates = root / "gates.toml"
    gates.write_text("[agreement]\nmin = 0.5\n")
    blocker = root / "a-file"
    blocker.write_text("")
    done = _harness(
        "runs", "check", a, "--gates", str(gates), "--results", str(root), "--junit", str(blocker / "j.xml")
    )
    assert done.returncode == 2 and "--junit" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    written = root / "new-folder" / "junit.xml"
    done = _harness("runs", "check", a, "--gates", str(gates), "--results", str(root), "--junit", str(written))
    assert done.returncode == 0 and written.is_file()


def test_anomaly_runs_are_gated_on_their_auc():
    run, baseline = _anomaly_run(device_auc=0.88, host_auc=0.9), _anomaly_run("base", device_auc=0.9)
    assert _only(_check(run, {"auc": {"min": 0.85}})).passed
    assert not _only(_check(run, {"auc": {"min": 0.89}})).passed
    drop = _only(_check(run, {"auc_drop": {"max": 0.01}}))
    assert not drop.passed and drop.figure == "tflm (host) AUC 0.9000 - device (sim) 0.8800 = +0.0200"
    assert _only(_check(run, {"auc_vs_baseline": {"max_drop": 0.03}}, baseline)).passed
    one_class = _only(_check(_anomaly_run(device_auc=None), {"auc": {"min": 0.5}}))
    assert not one_class.passed and "one class only" in one_class.detail


@pytest.mark.parametrize("gate", ["agreement", "accuracy_drop", "accuracy_vs_baseline"])
def test_accuracy_gates_are_refused_on_anomaly_runs_naming_theirs(gate):
    settings = {"agreement": {"min": 0.9}, "accuracy_drop": {"max": 0.1}, "accuracy_vs_baseline": {"max_drop": 0.1}}
    with pytest.raises(UserError, match=r"anomaly runs do not have .* gates for anomaly runs: \[auc\] min"):
        _check(_anomaly_run(), {gate: settings[gate]}, _anomaly_run("base"))
    with pytest.raises(UserError, match="baseline ad is an anomaly run, run an eval run"):
        _check(_run(), {"latency": {"max_regression": 0.1}}, _anomaly_run())


def test_compare_refuses_an_anomaly_run_against_a_classification_run():
    from harness.results.compare import compare_runs

    with pytest.raises(UserError, match="ad holds anomaly scores and the other run classes: compare runs of one task"):
        compare_runs(_anomaly_run(), _run())


def _gates_file(tmp_path, text: str) -> dict:
    gates = tmp_path / "gates.toml"
    gates.write_text(text)
    return load_gates(gates)


def test_absolute_accuracy_floors_pass_and_fail_overall_and_per_subset(tmp_path):
    run = _run(subsets={"all": _entry(accuracy=0.92), "distance_far": _entry(accuracy=0.75)})
    every = _only(_check(run, _gates_file(tmp_path, "[accuracy]\nmin = 0.9\n")))
    assert every.status == "failed"
    assert every.detail == (
        "device accuracy (sim): all 0.9200, distance_far 0.7500; min 0.9; under the bound: distance_far"
    )

    relaxed = _gates_file(tmp_path, "[accuracy]\nmin = 0.9\n[accuracy.distance_far]\nmin = 0.7\n")
    assert relaxed == {"accuracy": {"min": 0.9, "distance_far": {"min": 0.7}}}
    passed = _only(_check(run, relaxed))
    assert passed.status == "passed" and passed.bound == "min 0.9; distance_far min 0.7", passed.detail

    only_far = _only(_check(run, _gates_file(tmp_path, "[accuracy.distance_far]\nmin = 0.8\n")))
    assert only_far.status == "failed" and only_far.figure == "device accuracy (sim): distance_far 0.7500"
    assert _only(_check(run, {"accuracy": {"all": {"min": 0.9}}})).status == "passed"
    missing = _only(_check(run, {"accuracy": {"lighting_dark": {"min": 0.5}}}))
    assert missing.status == "not judged" and "lighting_dark (not in this run)" in missing.detail


def test_f1_floor_names_which_f1_and_does_not_judge_an_na_f1():
    run = _run(
        subsets={
            "all": _entry(f1_wv=0.91, f1_counts=0.5),
            "person": _entry(f1_counts=0.88),
            "distance_far": _entry(pool_incomplete="3 of 40"),
        }
    )
    result = _only(_check(run, {"f1": {"min": 0.85}}))
    assert result.status == "passed"
    assert result.figure == "device F1 (sim): all 0.9100 (f1_wv), person 0.8800 (f1_counts)"
    assert "not judged: distance_far (F1 n/a: negative pool 3 of 40 evaluated; evaluate with --pools)" in result.detail
    assert _only(_check(run, {"f1": {"min": 0.9}})).status == "failed"

    only_na = _only(_check(run, {"f1": {"distance_far": {"min": 0.5}}}))
    assert only_na.status == "not judged" and "F1 n/a" in only_na.detail
    assert _only(_check(run, {"f1": {"distance_far": {"min": 0.5}}}, strict=True)).status == "failed"


def test_latency_ceilings_in_ms_name_the_source():
    sim = _run(latency=_latency("sim", micros=6000.0, p90=7500.0))
    result = _only(_check(sim, {"latency_ms": {"max_median": 6.5, "max_p90": 8}}))
    assert result.status == "passed"
    assert result.detail == (
        "median 6.000 ms, p90 7.500 ms (sim: this machine's wall-clock time); max_median 6.5 ms; max_p90 8 ms"
    )
    slow = _only(_check(sim, {"latency_ms": {"max_p90": 7}}))
    assert slow.status == "failed" and "p90 7.500 ms (sim" in slow.detail and "over the bound: p90" in slow.detail

    device = _run(latency=_latency("device", micros=5953.2))
    assert "(device: the board's timer)" in _only(_check(device, {"latency_ms": {"max_median": 6}})).detail
    emulated = _run(latency=_latency("emulated", micros=None, instructions=9.2e6))
    counted = _only(_check(emulated, {"latency_ms": {"max_median": 6}}))
    assert counted.status == "not judged" and "emulated latency: instructions" in counted.detail


def test_arena_and_flash_ceilings_in_bytes_name_their_source():
    run = _run(arena_used=168_368, arena_source="device", firmware={"flash_bytes": 412_000})
    arena = _only(_check(run, {"arena_bytes": {"max": 200_000}}))
    assert arena.status == "passed" and arena.detail == "168,368 bytes (device arena); max 200,000 bytes"
    assert _only(_check(run, {"arena_bytes": {"max": 100_000}})).status == "failed"
    flash = _only(_check(run, {"flash_bytes": {"max": 400_000}}))
    assert (
        flash.status == "failed" and flash.detail == "412,000 bytes (firmware image, from the ELF); max 400,000 bytes"
    )

    unreported = _only(_check(_run(arena_used=None), {"arena_bytes": {"max": 1}}))
    assert unreported.status == "not judged" and "not reported by the DUT" in unreported.detail
    virtual = _only(_check(_run(), {"flash_bytes": {"max": 1 << 20}}))
    assert virtual.status == "not judged" and "no firmware image" in virtual.detail


BASELINE_GATES = {
    "accuracy_vs_baseline": {"max_drop": 0.02},
    "latency": {"max_regression": 0.05},
    "arena": {"max_growth_bytes": 0},
    "flash": {"max_growth_bytes": 0},
}


def test_baseline_gates_without_a_baseline_are_not_judged_and_fail_only_when_strict():
    results = _check(_run(), BASELINE_GATES)
    assert {r.status for r in results} == {"not judged"}
    assert all("pass --baseline RUN" in r.detail for r in results)
    assert {r.status for r in _check(_run(), BASELINE_GATES, strict=True)} == {"failed"}
    auc = _only(_check(_anomaly_run(), {"auc_vs_baseline": {"max_drop": 0.01}}))
    assert auc.status == "not judged"


def test_check_exits_0_on_gates_not_judged_and_1_when_strict(device_and_sim_runs, capsys):
    from harness.cli.app import main

    root, run, _ = device_and_sim_runs
    gates = root / "gates.toml"
    gates.write_text("[agreement]\nmin = 0.9\n[latency]\nmax_regression = 0.05\n[arena]\nmax_growth_bytes = 0\n")
    check = ["runs", "check", run, "--gates", str(gates), "--results", str(root)]
    assert main(check) == 0
    printed = capsys.readouterr().out
    assert "PASS agreement" in printed and "NOT JUDGED latency: not judged: this gate compares" in printed
    assert main([*check, "--json"]) == 0
    statuses = [(r["name"], r["status"]) for r in json.loads(capsys.readouterr().out)]
    assert statuses == [("agreement", "passed"), ("latency", "not judged"), ("arena", "not judged")]
    assert main([*check, "--strict"]) == 1
    assert "FAIL latency" in capsys.readouterr().out


def test_junit_carries_every_gates_figure_and_bound_with_a_case_per_gate_and_subset():
    subsets = {"all": _entry(accuracy=0.92), "distance_far": _entry(accuracy=0.85), "lighting_dark": _entry(n=0)}
    run = _run(subsets=subsets, latency=_latency("sim", micros=6000.0))
    gates = {
        "accuracy": {"min": 0.9, "distance_far": {"min": 0.8}, "lighting_dark": {"min": 0.5}},
        "latency_ms": {"max_median": 10},
        "arena": {"max_growth_bytes": 0},
    }
    suite = ET.fromstring(junit_xml(run, _check(run, gates)))
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("5", "0", "2")
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    figures = {name: {p.get("name"): p.get("value") for p in case.iter("property")} for name, case in cases.items()}
    assert figures == {
        "accuracy.all": {"figure": "device accuracy (sim): all 0.9200", "bound": "min 0.9"},
        "accuracy.distance_far": {
            "figure": "device accuracy (sim): distance_far 0.8500",
            "bound": "distance_far min 0.8",
        },
        "accuracy.lighting_dark": {"figure": "n/a", "bound": "lighting_dark min 0.5"},
        "latency_ms": {"figure": "median 6.000 ms (sim: this machine's wall-clock time)", "bound": "max_median 10 ms"},
        "arena": {"figure": "n/a", "bound": "max_growth_bytes 0 bytes"},
    }
    assert (
        cases["accuracy.lighting_dark"].find("skipped").get("message").startswith("not judged: lighting_dark (n = 0)")
    )
    assert cases["latency_ms"].find("failure") is None and cases["latency_ms"].find("skipped") is None
    skipped = cases["arena"].find("skipped").get("message")
    assert skipped.startswith("not judged: this gate compares with a baseline") and "max_growth_bytes 0" in skipped

    strict = ET.fromstring(
        junit_xml(run, _check(run, {"accuracy": {"min": 0.95, "lighting_dark": {"min": 0.5}}}, strict=True))
    )
    verdicts = {
        case.get("name"): [child.tag for child in case if child.tag in ("failure", "skipped")] for case in strict
    }
    assert verdicts == {
        "accuracy.all": ["failure"],  # 0.92 under the floor
        "accuracy.distance_far": ["failure"],
        "accuracy.lighting_dark": ["failure"],  # its own table and no value: fails under --strict
    }
    assert (
        strict.get("failures") == "3"
        and "(--strict)" in strict.find("testcase[@name='accuracy.lighting_dark']/failure").text
    )


def test_a_gate_not_judged_as_a_whole_is_one_skipped_case():
    run = _run(reference=None)
    suite = ET.fromstring(junit_xml(run, _check(run, {"agreement": {"min": 0.9}})))
    (case,) = suite.findall("testcase")
    assert case.get("name") == "agreement" and "no host reference" in case.find("skipped").get("message")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[accuracy]\n", r"\[accuracy\] needs `min = NUMBER` \(or \[accuracy.SUBSET\] tables of it\)"),
        ("[accuracy.distance_far]\nmax = 0.8\n", r"\[accuracy.distance_far\] has no setting max; it takes min"),
        ('[f1.distance_far]\nmin = "high"\n', r"\[f1.distance_far\] min must be a number"),
        ("[latency_ms]\n", "needs one of `max_median = NUMBER`, `max_p90 = NUMBER`"),
        ("[latency_ms]\nmax_p95 = 3\n", "has no setting max_p95; it takes max_median, max_p90"),
        ("[agreement.all]\nmin = 0.9\n", r"\[agreement\] has no setting all; it takes min"),
    ],
)
def test_malformed_absolute_gates_are_one_line_naming_the_fix(tmp_path, text, problem):
    with pytest.raises(UserError, match=problem):
        _gates_file(tmp_path, text)


def test_a_subset_bounded_by_its_own_table_and_not_in_the_run_fails_under_strict():
    run = _run(subsets={"distance_far": _entry(f1_counts=0.5)})
    gates = {"f1": {"min": 0.4, "lighting_dark": {"min": 0.9}}}
    lenient = _only(_check(run, gates))
    assert lenient.status == "passed" and "not judged: lighting_dark (not in this run)" in lenient.detail
    strict = _only(_check(run, gates, strict=True))
    assert strict.status == "failed" and strict.figure == "device F1 (sim): distance_far 0.5000 (f1_counts)"
    assert strict.detail.endswith("lighting_dark not judged, yet bounded by its own table (--strict)")
    no_value = _run(subsets={"all": _entry(), "distance_far": _entry(n=0)})
    own = {"accuracy": {"min": 0.5, "distance_far": {"min": 0.5}}}
    assert _only(_check(no_value, own, strict=True)).status == "failed"


def test_a_subset_only_the_gate_wide_bound_covers_does_not_decide_even_under_strict():
    run = _run(subsets={"all": _entry(), "distance_far": _entry(n=0)})
    result = _only(_check(run, {"accuracy": {"min": 0.5}}, strict=True))
    assert result.status == "passed" and "not judged: distance_far (n = 0)" in result.detail


def _keyword_run(subsets):
    run = _run("kws", subsets=subsets)
    confusion = {"labels": ["silence", "unknown", "yes", "no"], "device": [[0] * 4] * 4}
    return Run(run.path, run.manifest, run.summary | {"task": "keyword_spotting", "confusion": confusion})


def test_a_subset_table_naming_no_subset_of_the_runs_task_is_refused_naming_the_valid_ones():
    run = _run(subsets={"distance_far": _entry()})
    with pytest.raises(UserError, match=r"\[accuracy.distanse_far\] names no subset run can have; valid: all, te"):
        _check(run, {"accuracy": {"min": 0.5, "distanse_far": {"min": 0.9}}})
    kws = _keyword_run({"all": _entry(), "yes": _entry()})
    with pytest.raises(UserError, match=r"\[f1.distance_far\] .* valid: all, silence, unknown, yes, no$"):
        _check(kws, {"f1": {"distance_far": {"min": 0.5}}})
    unevaluated = _only(_check(kws, {"accuracy": {"no": {"min": 0.5}}}))  # a class of the card, not in the run
    assert unevaluated.status == "not judged" and "no (not in this run)" in unevaluated.detail


def test_check_refuses_a_misspelt_subset_table_in_one_line(device_and_sim_runs, capsys):
    from harness.cli.app import main

    root, run, _ = device_and_sim_runs
    gates = root / "gates.toml"
    gates.write_text("[accuracy.distanse_far]\nmin = 0.9\n")
    assert main(["runs", "check", run, "--gates", str(gates), "--results", str(root)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "[accuracy.distanse_far] names no subset" in error and "distance_far" in error


def test_accuracy_f1_and_agreement_figures_name_their_source():
    run = _run(subsets={"all": _entry(accuracy=0.9, agreement=0.95, host_accuracy=0.92)})
    emulated = Run(run.path, run.manifest | {"board": {"id": "qemu", "latency_source": "emulated"}}, run.summary)
    agreement = _only(_check(emulated, {"agreement": {"min": 0.9}}))
    assert agreement.figure == "agreement of the device (emulated) with host reference tflm (host): all 0.9500"
    drop = _only(_check(emulated, {"accuracy_drop": {"max": 0.05}}))
    assert drop.figure == "accuracy of host reference tflm (host) minus device (emulated): all 0.0200"
    versus = _only(_check(emulated, {"accuracy_vs_baseline": {"max_drop": 0.1}}, run))
    assert versus.figure == "accuracy of baseline run device (sim) minus this run's device (emulated): all 0.0000"
    suite = ET.fromstring(junit_xml(emulated, _check(emulated, {"accuracy": {"min": 0.5}})))
    figure = next(p.get("value") for p in suite.iter("property") if p.get("name") == "figure")
    assert figure == "device accuracy (emulated): all 0.9000"


def test_sim_latency_change_is_not_judged_without_a_tolerance_and_judged_with_one():
    """The +125 % of a loaded host: compare calls it not judgeable without a tolerance, and so does the gate."""
    run = _run(latency=_latency("sim", micros=23_709.1))
    baseline = _run("base", latency=_latency("sim", micros=10_534.8))
    result = _only(_check(run, {"latency": {"max_regression": 0.05}}, baseline))
    assert result.status == "not judged" and result.figure == "n/a"
    assert "sim: this machine's wall-clock time: a change is judged only with a tolerance" in result.detail
    assert "[latency] tolerance" in result.detail
    assert _only(_check(run, {"latency": {"max_regression": 0.05}}, baseline, strict=True)).status == "failed"

    judged = _only(_check(run, {"latency": {"max_regression": 0.05, "tolerance": 0.3}}, baseline))
    assert judged.status == "failed"
    assert judged.figure == "median 10,534.8 -> 23,709.1 µs (sim), +125.06%"
    assert judged.bound == "max_regression 0.05; tolerance 0.3"
    calm = _run(latency=_latency("sim", micros=12_000.0))  # +13.9 %: over max_regression, within the tolerance
    within = _only(_check(calm, {"latency": {"max_regression": 0.05, "tolerance": 0.3}}, baseline))
    assert within.status == "passed" and "within the tolerance" in within.detail


@pytest.mark.parametrize(
    ("source", "figure", "tolerance", "slower", "verdict"),
    [
        ("emulated", "instructions", 0.0, 1.000_001, "failed"),  # exact: any increase over the bound is one
        ("device", "cycles", 0.02, 1.015, "passed"),  # under the 2 % a cycle counter is trusted to
        ("device", "cycles", 0.02, 1.03, "failed"),
        ("device", "micros", 0.02, 1.03, "failed"),
    ],
)
def test_latency_changes_are_judged_with_their_figures_own_tolerance(source, figure, tolerance, slower, verdict):
    from harness.results import judgeable

    assert judgeable.judgeable(figure, source).tolerance == tolerance
    base = 9_200_000.0

    def run(run_id, value):
        return _run(run_id, latency=_latency(source, **{"micros": None, figure: value}))

    result = _only(_check(run("run", base * slower), {"latency": {"max_regression": 0.0}}, run("base", base)))
    assert result.status == verdict, result.detail
    assert f"({source})" in result.figure and judgeable.UNITS[figure] in result.figure


def test_instruction_counts_and_cycles_are_gated_on_their_own():
    emulated = _run(latency=_latency("emulated", micros=None, instructions=9_200_000))
    ceiling = _only(_check(emulated, {"instructions": {"max_median": 10_000_000, "max_p90": 9_000_000}}))
    assert ceiling.status == "failed" and "over the bound: p90" in ceiling.detail
    assert ceiling.figure == (
        "median 9,200,000 instructions, p90 9,200,000 instructions (emulated: QEMU -icount instruction counts, exact)"
    )
    assert ceiling.bound == "max_median 10,000,000 instructions; max_p90 9,000,000 instructions"

    baseline = _run("base", latency=_latency("emulated", micros=None, instructions=9_000_000))
    both = {"instructions": {"max_median": 10_000_000, "max_regression": 0.05}}
    judged = _only(_check(emulated, both, baseline))
    assert (
        judged.status == "passed"
        and "median 9,000,000.0 -> 9,200,000.0 instructions (emulated), +2.22%" in judged.detail
    )
    assert _only(_check(emulated, {"instructions": {"max_regression": 0.01}}, baseline)).status == "failed"
    without = _only(_check(emulated, both))
    assert without.status == "not judged" and "pass --baseline RUN" in without.detail

    sim = _run(latency=_latency("sim", micros=6000.0))
    counted = _only(_check(sim, {"instructions": {"max_median": 1}}))
    assert counted.status == "not judged"
    assert counted.detail.startswith(
        "not judged: no latency in instructions in this run (sim latency: µs); gate it with [latency_ms]"
    )

    device = _run(latency=_latency("device", micros=1000.0, cycles=480_000))
    cycles = _only(_check(device, {"cycles": {"max_median": 500_000}}))
    assert cycles.status == "passed" and cycles.figure == "median 480,000 cycles (device: the board's cycle counter)"
    ms = _only(_check(emulated, {"latency_ms": {"max_median": 6}}))
    assert ms.status == "not judged" and "gate it with [instructions] max_median" in ms.detail


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[latency]\ntolerance = 0.1\n", r"\[latency\] needs `max_regression = NUMBER`"),
        (
            "[latency]\nmax_regression = 0.1\ntolerance = -0.1\n",
            r"tolerance = -0.1 is out of range; it must be at least 0",
        ),
        ("[instructions]\ntolerance = 0\n", "needs one of `max_median = NUMBER`, `max_p90 = NUMBER`, `max_regression"),
        ("[cycles]\nmax_regression = 2\n", "max_regression = 2 is out of range; bounds are fractions from -1 to 1"),
        ("[cycles]\nmax_median = -1\n", "max_median = -1 is out of range; it must be at least 0"),
        (
            "[instructions]\nmax_mean = 1\n",
            "has no setting max_mean; it takes max_median, max_p90, max_regression, tolerance",
        ),
    ],
)
def test_malformed_latency_gates_are_one_line_naming_the_fix(tmp_path, text, problem):
    with pytest.raises(UserError, match=problem):
        _gates_file(tmp_path, text)


def test_check_says_not_judged_on_two_sim_runs_without_a_tolerance(tmp_path, capsys):
    from harness.cli.app import main

    ids = [f"s{i}" for i in range(10)]
    for run_id, micros in (("before", 10_534.8), ("after", 23_709.1)):
        _write_run(tmp_path, _run(run_id, latency=_latency("sim", micros=micros)), _samples(ids, micros))
    gates = tmp_path / "gates.toml"
    gates.write_text("[latency]\nmax_regression = 0.05\n")
    check = ["runs", "check", "after", "--gates", str(gates), "--baseline", "before", "--results", str(tmp_path)]
    assert main(check) == 0  # a gate not judged alone does not fail the check
    printed = capsys.readouterr().out
    assert (
        printed.startswith("NOT JUDGED latency: not judged: sim: this machine's wall-clock time")
        and "FAIL" not in printed
    )
    assert main([*check, "--strict"]) == 1
    assert "FAIL latency: not judged: sim: this machine's wall-clock time" in capsys.readouterr().out
    gates.write_text("[latency]\nmax_regression = 0.05\ntolerance = 0.1\n")
    assert main(check) == 1
    assert capsys.readouterr().out.startswith("FAIL latency: median 10,534.8 -> 23,709.1 µs (sim), +125.06%")


def test_the_gates_files_of_docs_lab_ci_are_valid(tmp_path):
    import re

    page = (Path(__file__).resolve().parents[3] / "docs" / "lab-ci.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", page, re.DOTALL)
    assert len(blocks) == 3
    for block in blocks:
        assert _gates_file(tmp_path, block)


def test_an_f1_reason_shared_by_several_subsets_is_said_once_naming_them():
    """Console (eval and runs report), gates and JUnit: one reason, said once, with the subsets that share it."""
    from harness.results.report import pool_note
    from harness.results.schema import parse
    from harness.results.summary import SubsetResult

    why = "only 0 of the 46 samples of its negative pool evaluated (--limit 5); drop --limit"
    subsets = {name: _entry(pool_incomplete="0 of 46") for name in ("all", "person", "distance_far")}
    for entry in subsets.values():
        entry["device"]["f1_unavailable"] = why
    subsets["lighting_dark"] = _entry(pool_incomplete="0 of 9")
    subsets["lighting_dark"]["device"]["f1_unavailable"] = "the dataset has no negatives for this subset"
    run = _run(subsets=subsets)

    result = _only(_check(run, {"f1": {"min": 0.5}}))
    assert result.status == "not judged" and result.detail.count(why) == 1, result.detail
    assert f"all, person, distance_far (F1 n/a: {why}); lighting_dark (F1 n/a: the dataset has no" in result.detail
    assert junit_xml(run, [result]).count(why) == 2  # the case's message and its output, each once

    note = pool_note({name: parse(SubsetResult, entry) for name, entry in subsets.items()})
    assert note.count(why) == 1 and "\n" not in note
    assert note.startswith(f"F1 n/a — all, person, distance_far: {why}; lighting_dark: the dataset has no")


@pytest.mark.slow
def test_report_gates_are_refused_in_one_line_before_anything_is_written(device_and_sim_runs):
    root, a, b = device_and_sim_runs
    out = root / "report.html"
    done = _harness("runs", "report", a, "--baseline", b, "--results", str(root), "--out", str(out))
    assert done.returncode == 2 and "pass --gates FILE" in done.stderr and done.stderr.count("\n") == 1
    gates = root / "gates.toml"
    gates.write_text("[speed]\nmax = 1\n")
    done = _harness("runs", "report", a, "--gates", str(gates), "--results", str(root), "--out", str(out))
    assert done.returncode == 2 and "unknown gate" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not out.exists()
