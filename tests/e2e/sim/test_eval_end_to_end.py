"""`harness eval` end to end on the virtual board, through the real command line."""

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest


def _harness(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, env=os.environ.copy()
    )


def _only_run(results):
    runs = [p for p in results.iterdir()]
    assert len(runs) == 1 and not runs[0].name.startswith(".")
    return runs[0]


def test_small_model_on_two_subsets_with_limit(tmp_path, small_model):
    done = _harness(
        "eval",
        "--model",
        "wv_quality_k_2_c_3",
        "--subset",
        "distance_far,lighting_dark",
        "--limit",
        "10",
        "--results",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    run = _only_run(tmp_path)
    table = pq.read_table(run / "samples.parquet").to_pylist()
    assert 10 < len(table) <= 20  # ten drawn from each subset; a dark far person may be drawn for both
    assert all(row["device_output"] == row["tflm_output"] for row in table)
    assert all(row["in_distance_far"] or row["in_lighting_dark"] for row in table)
    assert all(row["latency_source"] == "sim" and row["microseconds"] > 0 for row in table)
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["subsets"]) == {"distance_far", "lighting_dark"}
    assert summary["subsets"]["distance_far"]["n"] == 10 and summary["subsets"]["lighting_dark"]["n"] >= 10
    far = summary["subsets"]["distance_far"]["device"]  # only dark non-persons, if any: part of its pool
    assert far["f1_wv"] is None and far["pool_incomplete"] == f"{far['negatives']} of {far['pool_size']}"
    assert far["f1_unavailable"].startswith(f"only {far['negatives']} of the {far['pool_size']} samples")
    assert far["pool_size"] > far["negatives"] and "F1 n/a" in done.stdout and "--pools adds" in done.stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["model"]["sha256"] == "c15b8f2be126af10e0d9a61036d363421021237a73aaf4efb7f65e72f79aebfc"
    assert manifest["device"]["firmware_build_id"].startswith("sim-")
    assert "distance_far" in done.stdout and "lighting_dark" in done.stdout


@pytest.mark.slow
def test_readme_main_job_default_model_distance_far(tmp_path, vww_model):
    done = _harness("eval", "--board", "sim", "--subset", "distance_far", "--results", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = _only_run(tmp_path)
    rows = pq.read_table(run / "samples.parquet").to_pylist()
    members = [row for row in rows if row["in_distance_far"]]
    assert len(members) >= 20 and all(row["device_output"] == row["tflm_output"] for row in rows)
    summary = json.loads((run / "summary.json").read_text())
    far = summary["subsets"]["distance_far"]
    assert far["n"] == len(members) and far["pool_added"] == len(rows) - len(members) > 0  # its pool, whole
    assert far["device"]["f1_wv"] is not None and far["device"]["f1_counts"] is not None
    assert far["device"]["pool_incomplete"] is None and far["device"]["f1_unavailable"] is None
    assert f"F1: distance_far's negative pool adds {far['pool_added']} samples (--no-pools skips it)" in done.stdout
    assert far["versus"]["tflm"] == {"agreement": 1.0, "max_diff_steps": 0.0}
    assert summary["bit_exact"]["tflm"] == len(rows)
    assert "distance_far" in done.stdout and "F1wv" in done.stdout


@pytest.mark.parametrize(
    "model", ["wv_quality_k_2_c_3", "wv_quality_micronets_vww2_50_50_INT8", "wv_quality_mcunet-10fps_vww"]
)
def test_zoo_models_with_different_inputs_run_unchanged(tmp_path, model):
    """RGB 50x50 softmax, greyscale 50x50, RGB 64x64 logits: cards only, no code per model."""
    from tests.conftest import fixture_model

    fixture_model(f"wake_vision_zoo/{model}.tflite")
    done = _harness("eval", "--model", model, "--subset", "all,lighting_dark", "--results", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((_only_run(tmp_path) / "summary.json").read_text())
    for entry in summary["subsets"].values():
        assert entry["device"]["f1_wv"] is not None and entry["host"]["tflm"]["accuracy"] is not None
    assert summary["bit_exact"]["tflm"] == summary["samples"]
    assert "lighting_dark" in done.stdout


def test_a_reference_that_refuses_the_model_is_recorded_and_the_rest_run(tmp_path):
    """LiteRT rejects TFLM's person_detect (its per-channel quantization); TFLM runs it."""
    from tests.conftest import fixture_model

    fixture_model("tflm/person_detect.tflite")
    done = _harness("eval", "--model", "tflm_person_detect", "--limit", "8", "--results", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((_only_run(tmp_path) / "summary.json").read_text())
    assert summary["references"]["used"] == ["tflm"]
    assert "quantized_dimension" in summary["references"]["refused"]["litert_ref"]
    assert summary["bit_exact"]["tflm"] == 8


def _cards_with_tflite_models():
    from harness.model.card import FilePreprocessing
    from harness.model.cards import all_cards

    # A files card has no demo set: its inputs are the MLPerf Tiny runner's files (test_runner_files.py).
    cards = all_cards().items()
    return [
        n for n, c in cards if c.file_name.endswith(".tflite") and not isinstance(c.preprocessing, FilePreprocessing)
    ]


@pytest.mark.parametrize("model", _cards_with_tflite_models())
def test_every_card_runs_on_the_virtual_board_with_its_demo_set(tmp_path, model):
    """Data, not code: each card's model on the demo set of its task (the float Keras cards run
    through their int8 conversion in test_convert.py)."""
    from harness.model.cards import load_card
    from tests.conftest import fixture_model

    card = load_card(model)
    fixture_model(card.mirror_path)
    frontend = getattr(card.preprocessing, "frontend", None) or {}
    if "mirror_path" in frontend:  # a frontend model file (a microfrontend one is generated)
        fixture_model(frontend["mirror_path"])
    done = _harness("eval", "--model", model, "--limit", "6", "--json", "--results", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == 6 and summary["bit_exact"]["tflm"] == 6
