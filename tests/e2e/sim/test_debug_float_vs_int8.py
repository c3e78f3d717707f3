"""`harness debug float-vs-int8` and harness.float_vs_int8() on the MLPerf Tiny VWW float model: one row per
quantized layer of its int8 conversion, finite figures in range, on samples the conversion did not calibrate on;
bad input refused in one line. The conversions are cached, so only the first test converts."""

import json
import math

import pytest

from tests.conftest import assert_refused_in_one_line, fixture_model
from tests.hostile import run_harness

pytest.importorskip("tensorflow", reason="converting needs tensorflow-cpu and tf-keras (test extras)")

CARD = "mlperf_tiny_vww_float"
CONVERTS = 600  # seconds: the first command converts the .h5 twice (int8 and float TFLite) on a loaded machine


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    fixture_model("mlperf_tiny/visual_wake_words.h5")
    cwd = tmp_path_factory.mktemp("debug")
    done = run_harness(cwd, "debug", "float-vs-int8", "--model", CARD, "--samples", "2", "--json", timeout=CONVERTS)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_one_row_per_quantized_layer_with_figures_in_range(comparison):
    from pathlib import Path

    from harness.model.preserved_run import PreservedGraph

    graph = PreservedGraph(Path(comparison["int8_model"]).read_bytes())
    quantized = [graph.tensors[i].name for op in graph.operators for i in op.outputs if graph.tensors[i].quantized]
    layers = comparison["layers"]
    assert [row["tensor"] for row in layers] == quantized and comparison["not_compared"] == []
    assert comparison["source"] == "host" and len(comparison["samples"]) == 2
    for row in layers:
        assert row["status"] == "compared" and row["samples"] == 2, row  # harness's own conversion: every name
        assert math.isfinite(row["cosine"]) and -1 <= row["cosine_min"] <= row["cosine"] <= 1
        assert math.isfinite(row["relative_l2"]) and 0 <= row["relative_l2"] <= row["relative_l2_max"]
    assert layers[-1]["operator"] == "SOFTMAX" and layers[-1]["cosine"] > 0.9
    assert 1 <= sum(row["worst"] for row in layers) <= 3


def test_the_samples_are_held_out_from_the_calibration(comparison):
    from harness.eval.convert import eval_split
    from harness.eval.dataset import load_dataset
    from harness.samples import DEMO

    calibration, held_out = eval_split(load_dataset(DEMO))
    assert comparison["samples"] == [sample.id for sample in held_out[:2]]
    assert not set(comparison["samples"]) & {sample.id for sample in calibration}


def test_the_table_fits_80_columns(comparison, tmp_path):
    done = run_harness(tmp_path, "debug", "float-vs-int8", "--model", CARD, "--samples", "2", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    rows = [line.split() for line in lines if line.split() and line.split()[0].isdigit()]
    assert [int(row[0]) for row in rows] == [layer["index"] for layer in comparison["layers"]]
    assert sum(row[-1] == "*" for row in rows) == sum(layer["worst"] for layer in comparison["layers"])


def test_the_api_returns_the_rows_as_a_dataframe(comparison):
    pytest.importorskip("pandas", reason="the DataFrame needs pandas (the lab extra)")
    import harness

    frame = harness.float_vs_int8(CARD, samples=2)
    assert list(frame["tensor"]) == [row["tensor"] for row in comparison["layers"]]
    assert list(frame["cosine"]) == pytest.approx([row["cosine"] for row in comparison["layers"]])
    assert frame.attrs["samples"] == comparison["samples"] and set(frame["source"]) == {"host"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--model", "no_such_card"), ("unknown model 'no_such_card'",)),
        (("--model", "mlperf_tiny_vww"), ("mlperf_tiny_vww has no float source", "--float-model")),
        (("--model", CARD, "--float-model", "notes.txt"), ("--float-model notes.txt", ".tflite, .keras or .h5")),
        (("--model", CARD, "--samples", "0"), ("argument --samples", "'0'")),
        (("--model", CARD, "--samples", "5000"), ("--samples 5000", "held-out samples; pass at most")),
    ],
    ids=["unknown-card", "no-float-source", "not-a-model-file", "no-samples", "more-than-held-out"],
)
def test_bad_input_is_refused_in_one_line(tmp_path, args, expected):
    for model in ("visual_wake_words.tflite", "visual_wake_words.h5"):
        fixture_model(f"mlperf_tiny/{model}")
    (tmp_path / "notes.txt").write_text("not a model\n")
    done = run_harness(tmp_path, "debug", "float-vs-int8", *args)
    assert_refused_in_one_line(done, *expected)
