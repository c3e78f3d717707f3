"""`harness convert` on the real float models: the MLPerf Tiny VWW .h5 and the Wake Vision Quickstart .keras."""

import json
import os

import pytest

from tests.forked_cli import run_harness_command

pytestmark = pytest.mark.slow  # TensorFlow loads and converts real models

pytest.importorskip("tensorflow", reason="converting needs tensorflow-cpu and tf-keras (test extras)")


def _harness(*args):
    return run_harness_command([*args], env=os.environ.copy(), timeout=900)


def test_vww_h5_converts_and_agrees_with_the_published_int8_model(tmp_path, vww_model):
    from tests.conftest import fixture_model

    fixture_model("mlperf_tiny/visual_wake_words.h5")
    out = tmp_path / "vww_int8.tflite"
    done = _harness(
        "models",
        "convert",
        "--card",
        "mlperf_tiny_vww_float",
        "--out",
        str(out),
        "--reference",
        "mlperf_tiny_vww",
        "--json",
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
    done = _harness(
        "models", "convert", "--card", "mlperf_tiny_vww_float", "--model", str(bogus), "--out", str(tmp_path / "x")
    )
    assert (
        done.returncode == 2
        and done.stderr.count("\n") == 1
        and "cannot be loaded by Keras 3 or tf-keras" in done.stderr
    )


def _tiny_keras_model(path, seed: int):
    """An untrained 50x50x3 two-class model, the input of card wv_quality_k_2_c_3; seed sets its weights."""
    import keras

    keras.utils.set_random_seed(seed)
    inputs = keras.Input((50, 50, 3), batch_size=1)
    x = keras.layers.Conv2D(4, 3, strides=2, activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(x)).save(path)
    return path


@pytest.fixture(scope="module")
def two_tiny_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    return _tiny_keras_model(folder / "a.keras", 1), _tiny_keras_model(folder / "b.keras", 2)


def test_eval_converts_the_model_file_named_not_an_earlier_cached_conversion(tmp_path, two_tiny_models):
    import hashlib

    manifests = []
    for model in two_tiny_models:
        done = _harness(
            "eval",
            "--model",
            "wv_quality_k_2_c_3",
            "--model-file",
            str(model),
            "--limit",
            "2",
            "--references",
            "tflm",
            "--json",
            "--results",
            str(tmp_path / "results"),
        )
        assert done.returncode == 0, done.stderr
        run_dir = json.loads(done.stdout)["run_dir"]
        manifests.append(json.loads((tmp_path / "results" / run_dir / "manifest.json").read_text())["model"])
    first, second = manifests
    assert first["sha256"] != second["sha256"] and first["file"] != second["file"]
    for manifest, model in zip(manifests, two_tiny_models, strict=True):
        assert manifest["converted_from"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
        assert manifest["converted_from"]["file"] == str(model)


def test_a_saved_model_folder_is_keyed_by_every_file_it_holds(tmp_path):
    from harness.model.convert import source_sha256

    folder = tmp_path / "saved"
    (folder / "variables").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"graph")
    (folder / "variables" / "variables.data-00000-of-00001").write_bytes(b"weights 1")
    before = source_sha256(folder)
    (folder / "variables" / "variables.data-00000-of-00001").write_bytes(b"weights 2")
    assert source_sha256(folder) != before


def test_demo_split_is_seeded_and_holds_both_classes_on_each_side():
    from harness.eval.convert import calibration_split, class_counts
    from harness.eval.dataset import load_dataset
    from harness.eval.sampling import select_samples
    from harness.eval.subsets import SUBSETS
    from harness.samples import DEMO

    pool = select_samples(load_dataset(DEMO).samples, [SUBSETS["all"]])
    pool_counts = class_counts(pool)
    calibration, held_out = calibration_split(pool, min(50, len(pool) // 2), seed=0)
    assert sorted(s.id for s in calibration + held_out) == sorted(s.id for s in pool)
    for half in (calibration, held_out):
        counts = class_counts(half)
        assert counts.keys() == pool_counts.keys() and len(counts) >= 2
        for name, count in counts.items():  # stratified: each class in proportion, to within one sample
            assert abs(count - pool_counts[name] * len(half) / len(pool)) <= 1
    again, _ = calibration_split(pool, len(calibration), seed=0)
    other, _ = calibration_split(pool, len(calibration), seed=1)
    assert [s.id for s in again] == [s.id for s in calibration] != [s.id for s in other]


def test_convert_reports_the_split_seed_and_per_class_counts(tmp_path, two_tiny_models):
    out = tmp_path / "tiny_int8.tflite"
    args = ["models", "convert", "--card", "wv_quality_k_2_c_3", "--model", str(two_tiny_models[0]), "--out", str(out)]
    done = _harness(*args, "--seed", "7", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["split_seed"] == 7 and len(report["held_out_classes"]) >= 2
    assert len(report["calibration_classes"]) >= 2
    printed = _harness(*args)
    assert printed.returncode == 0 and "split seed 0" in printed.stdout and "class 1:" in printed.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny_int8.tflite"]
