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


def test_eval_profile_on_the_virtual_board_is_refused_before_anything_is_written(small_model, tmp_path):
    done = _harness(
        "eval", "--model", "wv_quality_k_2_c_3", "--limit", "2", "--profile", "--results", str(tmp_path / "r")
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no per-operator timer" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


@pytest.mark.qemu
@needs_tflm_tree
def test_an_eval_profile_on_qemu_is_kept_with_the_run_and_shown_in_its_report(small_model, tmp_path):
    results = tmp_path / "r"
    eval_args = ("--board", "qemu_m7", "--model", "wv_quality_k_2_c_3", "--tflm", TFLM_TREE, "--limit", "2")
    done = _harness("eval", *eval_args, "--profile", "--results", str(results))
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in results.iterdir() if p.is_dir()]
    stored = json.loads((run / "summary.json").read_text())["profile"]
    assert stored["source"] == "emulated" and stored["unit"] == "instructions"
    assert len(stored["operators"]) == stored["operators_run"] > 3
    assert abs(sum(op["value"] for op in stored["operators"]) / stored["total"] - 1) <= 0.05

    from harness import load_run

    profile = load_run(run).profile
    line = next(line for line in done.stdout.splitlines() if line.startswith("operator profile: "))
    assert line == f"operator profile: {profile.headline()}"  # the console and the report: one headline
    report = tmp_path / "r.html"
    shown = _harness("runs", "report", "latest", "--results", str(results), "--out", str(report))
    assert shown.returncode == 0, shown.stderr
    html = report.read_text()
    assert f'id="profile-{run.name}"' in html and profile.headline() in html
    for kind in profile.by_kind:
        assert f'data-operator="{kind.operator}"' in html
