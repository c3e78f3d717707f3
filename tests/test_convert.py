"""`harness convert` on the real float models: the MLPerf Tiny VWW .h5 and the Wake Vision Quickstart .keras."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow", reason="converting needs tensorflow-cpu and tf-keras (test extras)")


def _harness(*args):
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=os.environ.copy(), timeout=900
    )


def test_vww_h5_converts_and_agrees_with_the_published_int8_model(tmp_path, vww_model):
    from tests.conftest import fixture_model

    fixture_model("mlperf_tiny/visual_wake_words.h5")
    out = tmp_path / "vww_int8.tflite"
    done = _harness(
        "convert", "--card", "mlperf_tiny_vww_float", "--out", str(out), "--reference", "mlperf_tiny_vww", "--json"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["reference"]["agreement"] >= 0.95 and report["reference"]["samples"] >= 90
    assert report["agreement"] >= 0.9
    evaluated = _harness(
        "eval",
        "--model",
        "mlperf_tiny_vww_float",
        "--model-file",
        str(out),
        "--subset",
        "distance_far",
        "--json",
        "--results",
        str(tmp_path / "results"),
    )
    assert evaluated.returncode == 0, evaluated.stderr
    summary = json.loads(evaluated.stdout)
    assert summary["bit_exact"]["tflm"] == summary["samples"] >= 20


def test_quickstart_keras_model_converts_and_runs_on_the_virtual_board(tmp_path):
    from tests.conftest import fixture_model

    fixture_model("wake_vision_quickstart/example_wake_vision_mobilenetv2.keras")
    done = _harness(
        "eval",
        "--model",
        "wake_vision_quickstart_mobilenetv2",
        "--subset",
        "distance_far",
        "--limit",
        "6",
        "--json",
        "--results",
        str(tmp_path / "results"),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == 6 and summary["bit_exact"]["tflm"] == 6


def test_a_file_that_is_no_keras_model(tmp_path):
    bogus = tmp_path / "model.h5"
    bogus.write_bytes(b"nope")
    done = _harness("convert", "--card", "mlperf_tiny_vww_float", "--model", str(bogus), "--out", str(tmp_path / "x"))
    assert (
        done.returncode == 2
        and done.stderr.count("\n") == 1
        and "cannot be loaded by Keras 3 or tf-keras" in done.stderr
    )
