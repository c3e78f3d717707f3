"""`harness debug layers` and `harness eval --trace-layers N`: the first operator where a board departs from the host,
named on a planted fault (HARNESS_PLANT_FAULT_OP) on the virtual board and on qemu_m7, kept with an eval run and
shown in its report and the API the same way."""

import json
import os
from pathlib import Path

import pytest

from harness.api import load_run
from tests.conftest import TFLM_TREE, needs_tflm_tree
from tests.forked_cli import run_harness_command

MODEL = "wv_quality_k_2_c_3"  # 13 operators; operator 4 is a MAX_POOL_2D whose +1 reaches operators 5 to 7
FAULT_OP = 4


def _harness(*args: str, fault: int | None = None, cwd: Path | None = None):
    env = dict(os.environ)
    env.pop("HARNESS_PLANT_FAULT_OP", None)
    if fault is not None:
        env["HARNESS_PLANT_FAULT_OP"] = str(fault)
    return run_harness_command(list(args), cwd=cwd, env=env, timeout=900)


def _trace(*args: str, fault: int | None = None) -> dict:
    done = _harness("debug", "layers", "--model", MODEL, "--json", *args, fault=fault)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _check_planted(trace: dict) -> None:
    """The fault's operator departs first, by one step in one element; none before it; the later ones it reaches
    are reported with their own counts."""
    layers = trace["layers"]
    assert trace["first_departure"] == FAULT_OP
    assert all(layer["equal"] for layer in layers[:FAULT_OP])
    planted = layers[FAULT_OP]
    assert (planted["differing"], planted["largest"], planted["unit"]) == (1, 1.0, "steps")
    later = [layer for layer in layers[FAULT_OP + 1 :] if not layer["equal"]]
    assert later and all(layer["differing"] >= 1 and layer["largest"] >= 1 for layer in later)
    assert [layer["index"] for layer in layers] == list(range(trace["operators_run"]))


def test_an_unperturbed_trace_on_the_virtual_board_is_all_equal(small_model):
    trace = _trace()
    assert trace["source"] == "sim" and trace["first_departure"] is None
    assert len(trace["layers"]) == 13 and all(layer["equal"] for layer in trace["layers"])
    assert trace["layers"][1]["operator"] == "CONV_2D" and trace["layers"][1]["shape"] == [1, 50, 50, 2]


def test_a_planted_fault_on_the_virtual_board_is_named_and_counted(small_model):
    _check_planted(_trace(fault=FAULT_OP))
    done = _harness("debug", "layers", "--model", MODEL, fault=FAULT_OP)
    assert done.returncode == 0, done.stderr
    assert f"first departure at operator {FAULT_OP} (MAX_POOL_2D): 1 of 576 elements differ" in done.stdout


def test_without_fetching_bytes_a_departure_is_named_by_its_digest_alone(small_model):
    trace = _trace("--fetch-bytes", "0", fault=FAULT_OP)
    assert trace["first_departure"] == FAULT_OP and trace["fetched_bytes"] == 0
    assert all(layer["differing"] is None for layer in trace["layers"])


def test_a_sample_is_chosen_by_its_id_and_an_unknown_id_is_refused_in_one_line(small_model):
    assert _trace("--sample", "demo_0003.jpg")["sample"] == "demo_0003.jpg"
    done = _harness("debug", "layers", "--model", MODEL, "--sample", "no_such.jpg")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no sample 'no_such.jpg'" in done.stderr


@pytest.mark.qemu
@needs_tflm_tree
def test_a_planted_fault_on_qemu_m7_is_named_as_on_the_virtual_board(small_model):
    trace = _trace("--board", "qemu_m7", "--tflm", TFLM_TREE, fault=FAULT_OP)
    assert trace["source"] == "emulated"
    _check_planted(trace)
    assert trace["layers"] == _trace(fault=FAULT_OP)["layers"]


def test_an_eval_run_keeps_the_traces_of_its_first_departing_samples(small_model, tmp_path):
    results = tmp_path / "results"
    done = _harness(
        "eval", "--model", MODEL, "--limit", "12", "--trace-layers", "2", "--results", str(results), fault=FAULT_OP
    )
    assert done.returncode == 0, done.stderr
    run = load_run(next(results.iterdir()))
    summary = run.summary
    samples = run.samples_frame()
    departing = list(samples["sample_id"][samples["device_output"] != samples["tflm_output"]])
    traces = summary.layer_traces
    assert len(traces) == min(2, len(departing)) >= 1
    assert [t.sample for t in traces] == departing[: len(traces)]
    for trace in traces:
        assert trace.first_departure.index == FAULT_OP and trace.source == "sim"
        assert f"layer trace: {trace.headline()}" in " ".join(done.stdout.split())

    report = tmp_path / "report.html"
    assert _harness("runs", "report", str(run.path), "--out", str(report)).returncode == 0
    page = report.read_text()
    assert page.count('class="first-departure"') == len(traces)
    assert f"Layer trace of sample {traces[0].sample}" in page

    import harness  # the API's view of the same trace

    frame = harness.layers_frame(run.layer_traces[0])
    assert frame.attrs["first_departure"] == FAULT_OP and len(frame) == 13
    assert frame.loc[FAULT_OP, "differing"] == 1


def test_a_run_whose_outputs_all_equal_the_host_traces_nothing(small_model, tmp_path):
    results = tmp_path / "results"
    done = _harness("eval", "--model", MODEL, "--limit", "4", "--trace-layers", "3", "--results", str(results))
    assert done.returncode == 0, done.stderr
    assert load_run(next(results.iterdir())).layer_traces == []
    assert "layer trace" not in done.stdout


def test_trace_layers_with_the_eembc_protocol_is_refused_before_anything_is_written(small_model, tmp_path):
    results = tmp_path / "results"
    done = _harness(
        "eval",
        "--model",
        MODEL,
        "--limit",
        "2",
        "--protocol",
        "eembc",
        "--trace-layers",
        "1",
        "--results",
        str(results),
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert not results.exists() or not any(results.iterdir())
