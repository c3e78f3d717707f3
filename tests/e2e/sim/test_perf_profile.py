"""`harness perf` and `harness profile`: on the virtual board, and operator by operator on QEMU."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import TFLM_TREE, needs_tflm_tree


def _harness(*args):
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=os.environ.copy()
    )


def test_perf_on_the_virtual_board_reports_sim_figures(small_model):
    done = _harness("perf", "--model", "wv_quality_k_2_c_3", "--runs", "12", "--warmups", "2", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["source"] == "sim" and report["unit"] == "µs"
    assert len(report["runs"]) == 12 and all(v > 0 for v in report["runs"])
    assert report["stats"]["min"] <= report["stats"]["median"] <= report["stats"]["p95"]
    text = _harness("perf", "--model", "wv_quality_k_2_c_3", "--runs", "5").stdout
    assert "µs (sim)" in text and "median" in text


def test_perf_times_a_keyword_cards_first_clip_through_its_frontend():
    """Any task's first sample, made as its task makes inputs: here a clip through the frontend model."""
    from tests.conftest import fixture_model

    fixture_model("tflm/micro_speech_quantized.tflite")
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    done = _harness("perf", "--model", "tflm_micro_speech", "--runs", "3", "--warmups", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["runs"]) == 3


def test_profile_on_the_virtual_board_says_why_not(small_model):
    done = _harness("profile", "--model", "wv_quality_k_2_c_3")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "no per-operator timer" in done.stderr


@pytest.mark.qemu
@needs_tflm_tree
def test_operator_profile_on_qemu_adds_up_to_the_whole_invoke(small_model):
    done = _harness("profile", "--board", "qemu_m7", "--model", "wv_quality_k_2_c_3", "--tflm", TFLM_TREE, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["total"]["unit"] == "instructions" and report["total"]["source"] == "emulated"
    assert len(report["operators"]) == report["operators_run"] > 3
    assert abs(report["coverage"] - 1) <= 0.05
