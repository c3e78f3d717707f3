"""MLPerf Tiny ad01: the card, the runner's windowed files, the DUT's score arithmetic against an independent
numpy computation, and AUC and Top-1 over files against values worked out by hand."""

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra.numpy import arrays

from harness.errors import UserError
from harness.eval.anomaly import anomaly_score, auc, file_scores, top1, windows_per_file
from harness.eval.runner_files import file_of, load_runner_dataset, runner_file_preparation
from harness.eval.tasks import AnomalyDetection, task_for
from harness.model.card_fit import check_card_model
from harness.model.cards import load_card
from harness.model.dut import DeviceShare, ModelOutputs, ReconstructionError, dut_computation
from harness.model.tflite_file import read_tflite
from harness.samples import Sample
from harness.tensors import TensorSpec
from tests.autoencoder_model import CARD, write_ad01_setup

AD01_SHA256 = "87cf24194ef93d1d9b11a591d805526b98008e351655d29883c825c9c106ba24"


def test_the_ad01_card_is_the_reference_model_and_says_what_its_dut_computes():
    card = load_card("mlperf_tiny_ad01")
    assert (card.task, card.output.kind, card.output.labels) == (
        "anomaly_detection",
        "reconstruction_mse",
        ("normal", "anomaly"),
    )
    assert (card.eembc.model, card.eembc.input, card.sha256) == ("ad01", "float32", AD01_SHA256)
    assert card.source["url"].endswith(
        "1afd2c9820f795965a6134facd0b4dfae41ef23f/benchmark/training/anomaly_detection/trained_models/ad01_int8.tflite"
    )
    assert card.mirror_path == "mlperf_tiny_reference/ad01_int8.tflite"
    assert isinstance(task_for(card), AnomalyDetection)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('kind = "reconstruction_mse"', 'kind = "softmax"'), "output.kind is 'softmax'; an anomaly_detection card"),
        (('input = "float32"', 'input = "model"'), "eembc.input must be 'float32'"),
        (('task = "anomaly_detection"', 'task = "classification"'), "reconstruction_mse is an anomaly score"),
        (('labels = ["normal", "anomaly"]', 'labels = ["a", "b", "c"]'), "an anomaly score has two classes"),
        (('pipeline = "mlperf-tiny-files"', 'pipeline = "resize_whole"'), "task 'anomaly_detection' must be one of"),
    ],
)
def test_a_card_that_mixes_up_the_anomaly_dut_is_refused_naming_the_field(tmp_path, change, message):
    path = tmp_path / "bad.toml"
    path.write_text(CARD.format(name="m.tflite", path="m.tflite", threshold=1.0).replace(*change))
    with pytest.raises(UserError, match=message):
        load_card(str(path))


def test_a_float32_dut_input_needs_the_reconstruction_score(tmp_path):
    path = tmp_path / "bad.toml"
    kws = load_card("mlperf_tiny_kws01").card_path.read_text().replace('input = "model"', 'input = "float32"')
    path.write_text(kws)
    with pytest.raises(UserError, match=r"eembc.input 'float32' is the anomaly DUT's input"):
        load_card(str(path))


def test_the_card_refuses_a_model_that_is_no_int8_autoencoder(tmp_path, small_model):
    card, _ = write_ad01_setup(tmp_path, files=2)
    with pytest.raises(UserError, match="reconstruction_mse needs a quantized int8 autoencoder"):
        check_card_model(load_card(str(card)), read_tflite(small_model))
    check_card_model(load_card(str(card)), read_tflite(tmp_path / "ad01_test.tflite"))  # the right one passes


def test_windowed_rows_give_one_sample_per_window_read_as_the_float_features(tmp_path):
    card_path, dataset = write_ad01_setup(tmp_path, files=2)
    card = load_card(str(card_path))
    data = load_runner_dataset(str(dataset), card, windows=True)
    assert len(data.samples) == 2 * 196  # (102400 - 2560) / 512 + 1 windows a file
    first, last = data.samples[0], data.samples[195]
    assert (first.id.endswith("@0"), last.flags["offset"], file_of(last)) == (True, 195 * 512, file_of(first))
    assert [s.label for s in data.samples[::196]] == [0, 1]
    computation = dut_computation(card, read_tflite(tmp_path / "ad01_test.tflite"))
    tensor = runner_file_preparation(card.eembc, computation.input).tensor_of(data.samples[3])
    features = np.fromfile(dataset / file_of(data.samples[3]), np.float32)
    assert tensor.dtype == np.float32 and tensor.shape == (1, 640)
    assert np.array_equal(tensor.reshape(-1), features[3 * 128 : 3 * 128 + 640])  # 512 bytes on: 128 floats


def test_a_window_that_is_not_the_reference_input_is_refused(tmp_path):
    card_path, dataset = write_ad01_setup(tmp_path, files=1)
    labels = dataset / "y_labels.csv"
    labels.write_text(labels.read_text().replace(",2560,512", ",640,512"))
    with pytest.raises(UserError, match=r"windows of 640 every 512 bytes; a window must be the model's input \(2560"):
        load_runner_dataset(str(dataset), load_card(str(card_path)), windows=True)


def _independent_score(features: np.ndarray, run_int8, in_q, out_q) -> str:
    """quantization_helpers.h and calculate_result written out with Python floats rounded to float32."""
    f32 = np.float32
    quantized = []
    for v in features.reshape(-1):
        r = float(f32(v) / f32(in_q[0]))
        r = np.floor(r + 0.5) if r >= 0 else -np.floor(-r + 0.5)
        quantized.append(int(min(127, max(-128, r + in_q[1]))))
    out = np.frombuffer(run_int8(np.array(quantized, np.int8).reshape(1, -1)), np.int8)
    total = f32(0)
    for q, v in zip(out, features.reshape(-1), strict=True):
        d = f32(f32(int(q) - out_q[1]) * f32(out_q[0])) - f32(v)
        total = f32(total + f32(d * d))
    return f"{float(total / f32(features.size)):0.3f}"


def test_the_score_is_the_reference_duts_arithmetic_and_printed_value(tmp_path):
    from harness.model.references import TflmReference

    write_ad01_setup(tmp_path, files=1)
    model = read_tflite(tmp_path / "ad01_test.tflite")
    computation = dut_computation(load_card("mlperf_tiny_ad01"), model)
    assert isinstance(computation, ReconstructionError)
    assert (computation.input.bytes, computation.input.dtype_name, computation.output.bytes) == (2560, "float32", 4)
    reference = TflmReference(model)
    rng = np.random.default_rng(5)
    in_q = (model.input.scale, model.input.zero_point)
    out_q = (model.output.scale, model.output.zero_point)
    for spread in (1.0, 30.0, 400.0):  # inside the int8 range, and far past it (clamped)
        features = rng.normal(20, spread, (1, 640)).astype(np.float32)
        score = np.frombuffer(computation.result(reference.run, features), np.float32)[0]
        assert f"{score:0.3f}" == _independent_score(features, reference.run, in_q, out_q)
        assert score == np.float32(float(f"{score:0.3f}"))  # as printed, then read back


def test_quantization_rounds_halves_away_from_zero_as_c_round():
    computation = ReconstructionError(_spec(9, 0.5, 1), _spec(9, 1.0, 0))  # the input: scale 0.5, zero point 1
    features = np.array([[0.25, -0.25, 0.75, -0.75, 100.0, -100.0, np.nan, 0.24]], np.float32)
    # v / 0.5: 0.5 -> 1, -0.5 -> -1, 1.5 -> 2, -1.5 -> -2 (not to even), then +1; clamped; NaN as the zero point
    assert computation.to_model(features).tolist() == [[2, 0, 3, -1, 127, -128, 1, 1]]


def _spec(dtype, scale, zero_point):
    return TensorSpec(dtype, (1, 8), scale, zero_point, 8)


def test_the_model_outputs_computation_is_the_models_own_tensors(tmp_path, small_model):
    model = read_tflite(small_model)
    computation = dut_computation(None, model)
    assert isinstance(computation, ModelOutputs)
    assert (computation.input, computation.output, computation.step) == (model.input, model.output, model.output_step)


def _samples(labels_by_file: dict[str, int], windows: int) -> list[Sample]:
    return [
        Sample(f"{name}@{i * 512}", None, {"label": label, "offset": i * 512})
        for name, label in labels_by_file.items()
        for i in range(windows)
    ]


def test_a_files_score_is_the_mean_of_its_windows():
    samples = _samples({"a.bin": 0, "b.bin": 1}, 3)
    files, labels, scores = file_scores(samples, [1.0, 2.0, 6.0, 4.0, 4.0, 7.0])
    assert files == ["a.bin", "b.bin"] and labels.tolist() == [0, 1] and scores.tolist() == [3.0, 5.0]


def test_auc_and_top1_against_hand_worked_values():
    labels = np.array([0, 0, 0, 1, 1])
    scores = np.array([1.0, 2.0, 4.0, 3.0, 5.0])
    # anomalous 3 beats normals 1, 2 (2 of 3); anomalous 5 beats all 3: (2 + 3) / 6
    assert auc(labels, scores) == pytest.approx(5 / 6)
    assert auc(np.array([0, 1, 1]), np.array([2.0, 2.0, 3.0])) == pytest.approx(0.75)  # a tie counts one half
    assert auc(np.array([0, 0]), np.array([1.0, 2.0])) is None
    # Thresholds 1 + k/100 * 4. Above 2.96 up to 3: {3, 4, 5} said anomalous: precision 2/3, recall 1: 83.33;
    # above 4 (k = 75): {5}: precision 1, recall 1/2: 75. The best is 83.33 (less the runner's 1e-8 guards).
    assert top1(labels, scores) == pytest.approx(100 * (2 / 3 + 1) / 2, abs=1e-5)
    perfect = top1(np.array([0, 0, 1]), np.array([1.0, 1.5, 9.0]))
    assert perfect == pytest.approx(100.0, abs=1e-5)


def test_anomaly_score_counts_files_and_windows():
    samples = _samples({"n1.bin": 0, "n2.bin": 0, "a1.bin": 1}, 2)
    score = anomaly_score(samples, [1.0, 1.0, 2.0, 2.0, 9.0, 9.0])
    assert (score.files, score.anomalous_files, score.windows) == (3, 1, 6)
    assert score.auc == 1.0 and score.top1_percent == pytest.approx(100.0, abs=1e-5)
    partial = anomaly_score(samples[:5], [1.0, 1.0, 2.0, 2.0, 9.0], windows_per_file(samples))
    assert (partial.files, partial.partial_files, partial.windows) == (2, 1, 4)  # a1.bin lacks a window
    normal_only = anomaly_score(samples[:4], [1.0, 1.0, 2.0, 2.0])
    assert normal_only.auc is None and normal_only.top1_percent is None  # one class: neither figure exists


@settings(max_examples=60, deadline=None)
@given(
    features=arrays(np.float32, (1, 8), elements=st.floats(-300, 300, width=32)),
    answered=arrays(np.int8, 8),
)
def test_a_device_that_runs_the_model_only_gets_the_duts_score_from_the_host(features, answered):
    """Harness firmware runs the model only: it is sent the quantized features (the model's input tensor) and
    answers the output tensor; the host's score from that is the one the DUT (and a host reference) gives."""
    computation = ReconstructionError(_spec(9, 0.5, 1), _spec(9, 0.25, -3))
    dut, ours = DeviceShare.of(computation, ("model", "reconstruction_mse")), DeviceShare.of(computation, ("model",))
    assert dut.whole and dut.tensors == computation and dut.sent(features) == features.tobytes()
    assert not ours.whole and ours.tensors == ModelOutputs(computation.model_input, computation.model_output)
    sent = ours.sent(features)
    assert sent == computation.to_model(features).tobytes() and len(sent) == ours.tensors.input.bytes

    def model(tensor):
        assert tensor.tobytes() == sent  # the host reference runs the model on what the board is sent
        return answered.tobytes()

    assert ours.result(features, answered.tobytes()) == computation.result(model, features)
    assert dut.result(features, b"\x00\x00\x80?") == b"\x00\x00\x80?"  # the DUT's printed score, as it is
