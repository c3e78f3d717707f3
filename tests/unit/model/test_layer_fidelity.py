"""Float against int8 layer by layer on a tiny Keras model converted in the test (harness/model/layer_fidelity.py):
tensors matched by the converter's names, per-tensor and per-channel dequantization, the figures, and the layers
that cannot be compared listed as such."""

import numpy as np
import pytest

from harness.model.layer_fidelity import compare_layers, dequantize, match_tensors, similarity
from harness.model.preserved_run import GraphTensor, PreservedGraph

pytestmark = pytest.mark.slow  # TensorFlow converts two tiny models (a few seconds)

pytest.importorskip("tensorflow", reason="converting needs tensorflow-cpu (test extras)")

SHAPE = (8, 8, 3)


def _keras_file(folder, prefix: str):
    import keras

    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input(SHAPE),
            keras.layers.Conv2D(4, 3, activation="relu", name=f"{prefix}conv"),
            keras.layers.Flatten(name=f"{prefix}flatten"),
            keras.layers.Dense(3, name=f"{prefix}dense"),
        ]
    )
    path = folder / f"{prefix}tiny.keras"
    model.save(path)
    return path, model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(int8 flatbuffer, float flatbuffer, the Keras model, held-out float inputs) of one tiny model, and the
    float flatbuffer of a model alike but for its layers' names."""
    from harness.model.convert import float_tflite, load_float_model, quantize

    folder = tmp_path_factory.mktemp("tiny")
    rng = np.random.default_rng(0)
    calibration = [rng.uniform(-1, 1, (1, *SHAPE)).astype(np.float32) for _ in range(16)]
    path, keras_model = _keras_file(folder, "")
    loaded = load_float_model(path)
    int8, floating = quantize(loaded, calibration, "int8"), float_tflite(loaded)
    other = float_tflite(load_float_model(_keras_file(folder, "renamed_")[0]))
    held_out = [rng.uniform(-1, 1, (1, *SHAPE)).astype(np.float32) for _ in range(3)]
    return int8, floating, keras_model, held_out, other


def _pairs(int8: bytes, inputs):
    graph = PreservedGraph(int8)
    tensor = graph.tensors[graph.inputs[0]]
    scale, zero_point = float(tensor.scales[0]), int(tensor.zero_points[0])
    return [(x, np.clip(np.round(x / scale + zero_point), -128, 127).astype(np.int8)) for x in inputs]


def test_every_layer_is_matched_by_name_and_close_to_float(tiny):
    int8, floating, _, held_out, _ = tiny
    report = compare_layers(int8, floating, _pairs(int8, held_out), "tiny.keras")
    graph = PreservedGraph(int8)
    outputs = [i for op in graph.operators for i in op.outputs]
    assert len(report.layers) + len(report.not_compared) == len(outputs)
    quantized = [graph.tensors[i].name for i in outputs if graph.tensors[i].quantized]
    assert [row.tensor for row in report.layers] == quantized
    assert {row.operator for row in report.not_compared} <= {"SHAPE", "STRIDED_SLICE", "PACK"}  # Flatten's shape
    assert {row.status for row in report.layers} == {"compared"}
    assert all(row.samples == len(held_out) for row in report.layers)
    for row in report.layers:
        assert -1 <= row.cosine_min <= row.cosine <= 1 and 0 <= row.relative_l2 <= row.relative_l2_max
        assert row.cosine > 0.99 and row.relative_l2 < 0.1, row  # int8 of a tiny model stays this close
    assert report.input.matched_by in ("name", "model input") and report.input.relative_l2 < 0.01
    assert sum(row.worst for row in report.layers) >= 1


def test_a_float_model_of_other_names_leaves_its_layers_unmatched_and_listed(tiny):
    int8, _, _, held_out, other = tiny
    report = compare_layers(int8, other, _pairs(int8, held_out), "renamed_tiny.keras")
    int8_graph, other_graph = PreservedGraph(int8), PreservedGraph(other)
    matches = match_tensors(int8_graph, other_graph)
    statuses = [row.status for row in report.layers]
    assert len(statuses) + len(report.not_compared) == sum(len(op.outputs) for op in int8_graph.operators)
    assert report.layers[0].status == "unmatched"  # the convolution's output has no tensor of its name
    last = report.layers[-1]  # the model's output still meets the float model's output
    assert last.status == "compared" and last.cosine > 0.99
    assert report.input.matched_by == "model input"  # the inputs' names differ too
    assert {rule for _, rule in matches.values()} <= {"model input", "model output", "name"}
    for row in report.layers:
        if row.status == "unmatched":
            assert row.cosine is None and row.relative_l2 is None and row.float_tensor is None


def test_non_finite_values_are_damage_not_figures(tiny):
    int8, floating, _, held_out, _ = tiny
    pairs = _pairs(int8, held_out)
    poisoned = pairs[0][0].copy()
    poisoned[0, 0, 0, 0] = np.nan
    report = compare_layers(int8, floating, [(poisoned, pairs[0][1]), *pairs[1:]], "tiny.keras")
    assert report.input.status == "non-finite" and report.input.cosine is None
    assert report.layers[0].status == "non-finite"  # the convolution reads the NaN
    assert all(row.cosine is None and row.relative_l2 is None for row in report.layers if row.status != "compared")


def test_per_channel_weights_dequantize_to_the_float_kernel(tiny):
    int8, _, keras_model, _, _ = tiny
    graph = PreservedGraph(int8)
    (conv,) = [op for op in graph.operators if op.name == "CONV_2D"]
    weights = graph.tensors[conv.inputs[1]]
    assert weights.scales.size == 4 and weights.axis == 0  # one scale per output channel
    real = dequantize(graph.constant(weights.index), weights)
    kernel = np.transpose(keras_model.layers[0].get_weights()[0], (3, 0, 1, 2))  # HWIO -> OHWI as TFLite keeps it
    cosine, error = similarity(real, kernel)
    assert cosine > 0.9999 and error < 0.01
    per_tensor = GraphTensor(0, "w", np.dtype(np.int8), real.shape, weights.scales[:1], weights.zero_points[:1], 0)
    assert not np.allclose(dequantize(graph.constant(weights.index), per_tensor), real)  # the channels' scales count


def test_dequantize_per_channel_along_its_axis():
    values = np.array([[1, 2], [3, 4]], dtype=np.int8)
    along_rows = GraphTensor(0, "t", np.dtype(np.int8), (2, 2), np.array([0.5, 2.0]), np.array([1, -1]), 0)
    along_columns = GraphTensor(0, "t", np.dtype(np.int8), (2, 2), np.array([0.5, 2.0]), np.array([1, -1]), 1)
    assert dequantize(values, along_rows).tolist() == [[0.0, 0.5], [8.0, 10.0]]
    assert dequantize(values, along_columns).tolist() == [[0.0, 6.0], [1.0, 10.0]]


def test_similarity_figures():
    assert similarity(np.array([1.0, 0.0]), np.array([-1.0, 0.0])) == (-1.0, 2.0)
    assert similarity(np.array([3.0, 4.0]), np.array([3.0, 4.0])) == (1.0, 0.0)
    assert similarity(np.zeros(3), np.ones(3)) == (None, 1.0)  # no direction to compare; the error is whole
    assert similarity(np.ones(3), np.zeros(3)) == (None, None)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError):
            similarity(np.array([1.0, bad]), np.ones(2))
