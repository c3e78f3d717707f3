"""Bad input: one line naming the problem and the fix, exit code 2, no traceback, nothing written."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from harness.cli import exits
from tests.conftest import REPO, assert_refused_in_one_line
from tests.forked_cli import run_harness_command


def _eval(tmp_path, *args):
    done = run_harness_command(
        ["eval", "--results", str(tmp_path / "results"), *args], cwd=tmp_path, env=os.environ.copy()
    )
    return done


def _assert_one_clear_line(done, tmp_path, *expected, code=exits.USAGE):
    assert_refused_in_one_line(done, *expected, code=code)
    results = tmp_path / "results"
    assert not results.exists() or not any(results.iterdir())


def test_unknown_board(tmp_path):
    _assert_one_clear_line(_eval(tmp_path, "--board", "uno"), tmp_path, "unknown board 'uno'", "nucleo_h743", "sim")


def test_unknown_subset(tmp_path):
    done = _eval(tmp_path, "--subset", "distance_far,distance_very_far")
    _assert_one_clear_line(done, tmp_path, "distance_very_far", "valid subsets", "lighting_dark")


def test_unknown_model_card(tmp_path):
    _assert_one_clear_line(_eval(tmp_path, "--model", "resnet"), tmp_path, "unknown model 'resnet'", "mlperf_tiny_vww")


def test_missing_card_file(tmp_path):
    _assert_one_clear_line(_eval(tmp_path, "--model", "cards/none.toml"), tmp_path, "does not exist")


def test_missing_model_file(tmp_path):
    done = _eval(tmp_path, "--model-file", str(tmp_path / "absent.tflite"))
    _assert_one_clear_line(done, tmp_path, "absent.tflite does not exist")


def test_file_that_is_not_tflite(tmp_path):
    bogus = tmp_path / "notes.tflite"
    bogus.write_text("these are not weights")
    _assert_one_clear_line(_eval(tmp_path, "--model-file", str(bogus)), tmp_path, "is not a TFLite model")


@pytest.mark.parametrize("keep", [0.05, 0.5, 0.95])
def test_truncated_tflite(tmp_path, small_model, keep):
    data = small_model.read_bytes()
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(data[: int(len(data) * keep)])
    done = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--model-file", str(cut))
    _assert_one_clear_line(done, tmp_path, "corrupt or truncated")


def test_card_whose_preprocessing_does_not_fit_the_model(tmp_path, small_model):
    done = _eval(tmp_path, "--model", "mlperf_tiny_vww", "--model-file", str(small_model))
    _assert_one_clear_line(done, tmp_path, "preprocessing.size", "match the model")


def test_bad_limit(tmp_path):
    _assert_one_clear_line(_eval(tmp_path, "--limit", "0"), tmp_path, "--limit", "at least 1")


def test_missing_dataset(tmp_path):
    _assert_one_clear_line(_eval(tmp_path, "--dataset", str(tmp_path / "nowhere")), tmp_path, "not found")


def test_real_board_that_is_not_connected(tmp_path):
    done = _eval(tmp_path, "--board", "nucleo_h743", "--port", str(tmp_path / "ttyACM9"))
    _assert_one_clear_line(done, tmp_path, "cannot open link", code=exits.DEVICE_NOT_FOUND)


@pytest.fixture
def damaged_dataset(tmp_path):
    """A copy of a slice of the demo set with one image missing and one that is not an image."""
    import csv
    import shutil

    from harness.eval.dataset import load_dataset

    demo = load_dataset("demo")
    root = tmp_path / "damaged"
    (root / "images").mkdir(parents=True)
    with open(demo.csv_path, newline="") as f:
        rows = list(csv.DictReader(f))[:12]
    for row in rows:
        shutil.copy(demo.csv_path.parent / "images" / row["filename"], root / "images" / row["filename"])
    (root / "images" / rows[0]["filename"]).unlink()
    (root / "images" / rows[1]["filename"]).write_bytes(b"not a png")
    with open(root / "labels.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return root


def test_unreadable_images_are_skipped_and_counted_or_fatal_with_strict(tmp_path, small_model, damaged_dataset):
    import json

    done = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--dataset", str(damaged_dataset), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["unreadable_images"]["count"] == 2 and summary["samples"] == 10
    # The content hash covers the 10 samples evaluated, not the 12 selected.
    from harness.eval.dataset import load_dataset
    from harness.eval.subsets import SUBSETS
    from harness.results.provenance import subset_content_hashes

    manifest = json.loads((Path(summary["run_dir"]) / "manifest.json").read_text())
    evaluated = list(load_dataset(str(damaged_dataset)).samples)[2:]
    assert manifest["dataset"]["subset_content_sha256"] == subset_content_hashes(evaluated, [SUBSETS["all"]])
    strict = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--dataset", str(damaged_dataset), "--strict")
    assert strict.returncode == 2 and "2 files could not be read" in strict.stderr
    assert strict.stderr.count("\n") == 1


def test_label_csv_missing_columns(tmp_path, small_model):
    root = tmp_path / "broken"
    (root / "images").mkdir(parents=True)
    (root / "labels.csv").write_text("filename,person\na.png,1\n")
    done = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--dataset", str(root))
    _assert_one_clear_line(done, tmp_path, "lacks the Wake Vision columns", "depiction")


def test_empty_subset(tmp_path, small_model, damaged_dataset):
    done = _eval(
        tmp_path, "--model", "wv_quality_k_2_c_3", "--dataset", str(damaged_dataset), "--subset", "depiction_person"
    )
    _assert_one_clear_line(done, tmp_path, "has no samples in depiction_person")


def _harness(tmp_path, *args):
    return run_harness_command([*args], cwd=tmp_path, env=os.environ.copy())


@pytest.fixture
def model_tflm_cannot_run(tmp_path, small_model):
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

    from tests.model_surgery import replace_first_operator

    path = tmp_path / "skip_gram.tflite"
    path.write_bytes(replace_first_operator(small_model.read_bytes(), schema.BuiltinOperator.SKIP_GRAM))
    return path


@pytest.mark.parametrize("command", ["eval", "inspect"])
def test_model_with_an_operator_tflm_lacks(tmp_path, model_tflm_cannot_run, command):
    if command == "eval":
        done = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--model-file", str(model_tflm_cannot_run))
    else:
        done = _harness(tmp_path, "models", "inspect", str(model_tflm_cannot_run))
    _assert_one_clear_line(done, tmp_path, "TFLM has no kernel for: SKIP_GRAM", "replace those layers")


def _operator_changed(tmp_path, small_model, name, **fields):
    from tests.model_surgery import mutate

    def change(model, graph):
        code = model.operatorCodes[graph.operators[1].opcodeIndex]
        for key, value in fields.items():
            setattr(code, key, value)

    path = tmp_path / f"{name}.tflite"
    path.write_bytes(mutate(small_model.read_bytes(), change))
    return path


@pytest.mark.parametrize("command", ["eval", "generate"])
def test_custom_and_unknown_operators_are_named(tmp_path, small_model, command):
    custom = _operator_changed(
        tmp_path, small_model, "custom", builtinCode=32, deprecatedBuiltinCode=32, customCode=b"MyOp"
    )
    unknown = _operator_changed(tmp_path, small_model, "unknown", builtinCode=250, deprecatedBuiltinCode=127)
    for path, named in ((custom, "custom MyOp"), (unknown, "builtin code 250")):
        if command == "eval":
            done = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--model-file", str(path))
        else:
            out = tmp_path / "build"
            done = _harness(
                tmp_path, "firmware", "generate", "--board", "esp32dev", "--model-file", str(path), "--out", str(out)
            )
        _assert_one_clear_line(done, tmp_path, f"TFLM has no kernel for: {named}")


def test_model_that_runs_at_no_arena_size(tmp_path, small_model):
    from tests.model_surgery import mutate

    def huge(model, graph):
        graph.tensors[graph.inputs[0]].shape = np.array([1, 2**31 - 1, 2**31 - 1, 3], np.int32)

    path = tmp_path / "huge.tflite"
    path.write_bytes(mutate(small_model.read_bytes(), huge))
    done = run_harness_command(
        ["models", "inspect", str(path), "--no-fit"], cwd=tmp_path, env=os.environ.copy(), timeout=300
    )
    _assert_one_clear_line(done, tmp_path, "no arena up to 67,108,864 bytes runs this model")


@pytest.fixture(scope="module")
def float16_model(tmp_path_factory):
    tf = pytest.importorskip("tensorflow", reason="building a float16 .tflite needs TensorFlow (the test extra)")
    keras = tf.keras
    inputs = keras.Input((50, 50, 3))
    x = keras.layers.Conv2D(2, 3)(inputs)
    outputs = keras.layers.Dense(2, activation="softmax")(keras.layers.Flatten()(x))
    converter = tf.lite.TFLiteConverter.from_keras_model(keras.Model(inputs, outputs))
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    path = tmp_path_factory.mktemp("float16") / "float16.tflite"
    path.write_bytes(converter.convert())
    return path


@pytest.mark.parametrize("board", ["sim", "esp32dev"])
def test_float16_model_where_int8_is_needed(tmp_path, float16_model, board):
    if board == "sim":
        done = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--model-file", str(float16_model))
    else:
        out = tmp_path / "build"
        done = _harness(
            tmp_path, "firmware", "generate", "--board", board, "--model-file", str(float16_model), "--out", str(out)
        )
    _assert_one_clear_line(done, tmp_path, "is a float model", "CONV_2D", "harness models convert")


@pytest.fixture(scope="module")
def float_model(tmp_path_factory):
    tf = pytest.importorskip("tensorflow", reason="building a float .tflite needs TensorFlow (the test extra)")
    keras = tf.keras
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(2, 3)(inputs)
    outputs = keras.layers.Dense(2, activation="softmax")(keras.layers.Flatten()(x))
    model = keras.Model(inputs, outputs)
    path = tmp_path_factory.mktemp("float") / "float.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    return path


def test_float_model_where_int8_is_needed(tmp_path, float_model):
    done = _eval(tmp_path, "--model", "wv_quality_k_2_c_3", "--model-file", str(float_model))
    _assert_one_clear_line(done, tmp_path, "is a float model", "CONV_2D", "harness models convert")


def test_model_that_does_not_fit_the_board(tmp_path):
    from tests.conftest import fixture_model

    big = fixture_model("wake_vision_zoo/wv_quality_mcunet-320kb-1mb_vww.tflite")
    done = _harness(
        tmp_path,
        "firmware",
        "generate",
        "--board",
        "nano33ble",
        "--model",
        "wv_quality_k_2_c_3",
        "--model-file",
        str(big),
    )
    _assert_one_clear_line(done, tmp_path, "bytes of flash", "nano33ble has 983,040", "choose a smaller model")
    assert not (tmp_path / "build").exists()


def _convert_refused(tmp_path, *args):
    """`harness convert` with args refused before anything is written next to --out."""
    out_folder = tmp_path / "out"
    out_folder.mkdir()
    before = sorted(out_folder.rglob("*"))
    done = _harness(tmp_path, "models", "convert", *[str(a).replace("OUT", str(out_folder)) for a in args])
    assert sorted(out_folder.rglob("*")) == before, "convert left a file behind"
    return done


def test_convert_refuses_a_keyword_spotting_card(tmp_path):
    model = tmp_path / "tiny.keras"
    model.write_bytes(b"not read: the card is refused first")
    done = _convert_refused(tmp_path, "--card", "mlperf_tiny_kws", "--model", model, "--out", "OUT/kws.tflite")
    _assert_one_clear_line(done, tmp_path, "keyword spotting card", "image classification cards only", "--card")


def test_convert_refuses_a_folder_that_is_no_saved_model(tmp_path):
    folder = tmp_path / "not_a_saved_model"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"\0" * 16)
    done = _convert_refused(tmp_path, "--card", "wv_quality_k_2_c_3", "--model", folder, "--out", "OUT/x.tflite")
    _assert_one_clear_line(done, tmp_path, "is not a SavedModel", "saved_model.pb", ".keras or .h5")


def test_convert_refuses_an_out_path_that_is_a_directory(tmp_path):
    model = tmp_path / "tiny.keras"
    model.write_bytes(b"not read: --out is refused first")
    done = _convert_refused(tmp_path, "--card", "wv_quality_k_2_c_3", "--model", model, "--out", "OUT")
    _assert_one_clear_line(done, tmp_path, "is a folder", "pass a file to write as --out MODEL.tflite")


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        ("eval", "--shuffle", "-5"),
        ("eval", "--switch-baud", "-5"),
        ("eval", "--link-baud", "-9600"),
        ("eval", "--emulate-invoke-ms", "nan"),
        ("eval", "--emulate-invoke-ms", "-5"),
        ("perf", "--warmups", "-5"),
        ("compare", "--latency-tolerance", "-1"),
        ("compare", "--latency-tolerance", "nan"),
        ("stream-score", "--tolerance-ms", "-1"),
        ("stream-build", "--snr-db", "inf"),
        ("stream-build", "--seed", "-1"),
    ],
)
def test_numeric_options_out_of_range_are_refused_at_parse_time(tmp_path, command, option, value):
    args = {
        "eval": ["eval", "--limit", "1", "--results", str(tmp_path / "results")],
        "perf": ["perf", "--runs", "2"],
        "compare": ["runs", "compare", "A", "B", "--results", str(tmp_path / "results")],
        "stream-score": ["stream", "score", "--ledger", "l.csv", "--detections", "d.csv"],
        "stream-build": ["stream", "build"],
    }[command]
    done = _harness(tmp_path, *args, f"{option}={value}")
    _assert_one_clear_line(done, tmp_path, f"argument {option}", repr(value))


def test_errors_below_the_cli_name_settings_and_the_cli_words_them_as_flags():
    """One place words a setting: the Python API shows its name, the command line its flag."""
    from harness.errors import UserError, setting

    error = UserError(f"{setting('labgrid_place')} needs a real board")
    assert str(error) == "'labgrid_place' needs a real board"
    assert error.worded_for_cli() == "--labgrid-place needs a real board"
    below_the_cli = [p for p in (REPO / "harness").rglob("*.py") if "cli" not in p.relative_to(REPO / "harness").parts]
    flagged = [
        f"{path.relative_to(REPO)}:{number}"
        for path in below_the_cli
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"Error\(f?\"[^`]*(?<![\w-])--[a-z]", line) and "--test" not in line
    ]
    assert not flagged, f"error messages that word a flag below the CLI (use setting()): {flagged}"
