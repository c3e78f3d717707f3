"""A small int8 autoencoder shaped as MLPerf Tiny's ad01 ([1,640] -> [1,640], the reference's tensor
scales), built with the tflite schema: two FULLY_CONNECTED layers through a narrow middle. Tests run it
where the real ad01_int8.tflite (not in the fixtures) would run."""

import flatbuffers
import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

FEATURES = 640
INPUT_QUANT = (0.391, 89)  # ad01_int8.tflite's input scale and zero point
OUTPUT_QUANT = (0.3645, 96)  # and its output's
FULLY_CONNECTED = 9


def _tensor(name: str, shape, dtype: int, buffer: int, scale: float, zero_point: int) -> schema.TensorT:
    tensor = schema.TensorT()
    tensor.name, tensor.shape, tensor.type, tensor.buffer = name, list(shape), dtype, buffer
    quant = schema.QuantizationParametersT()
    quant.scale, quant.zeroPoint = [scale], [zero_point]
    tensor.quantization = quant
    return tensor


def _buffer(values: np.ndarray | None) -> schema.BufferT:
    buffer = schema.BufferT()
    if values is not None:
        buffer.data = np.frombuffer(values.tobytes(), np.uint8)
    return buffer


def _fully_connected(inputs: list[int], output: int) -> schema.OperatorT:
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, inputs, [output]
    op.builtinOptionsType = schema.BuiltinOptions.FullyConnectedOptions
    op.builtinOptions = schema.FullyConnectedOptionsT()
    return op


def autoencoder_model(hidden: int = 8, seed: int = 0, input_quant: tuple[float, int] = INPUT_QUANT) -> bytes:
    """int8 [1,640] -> FULLY_CONNECTED -> int8 [1,hidden] -> FULLY_CONNECTED -> int8 [1,640]."""
    rng = np.random.default_rng(seed)
    w1 = rng.integers(-4, 5, (hidden, FEATURES), dtype=np.int8)
    w2 = rng.integers(-64, 65, (FEATURES, hidden), dtype=np.int8)
    b1 = rng.integers(-200, 200, hidden, dtype=np.int32)
    b2 = rng.integers(-200, 200, FEATURES, dtype=np.int32)
    (in_scale, in_zp), (out_scale, out_zp) = input_quant, OUTPUT_QUANT
    w_scale, mid_scale = 0.01, 0.5
    tensors = [
        _tensor("input", [1, FEATURES], 9, 0, in_scale, in_zp),
        _tensor("w1", [hidden, FEATURES], 9, 1, w_scale, 0),
        _tensor("b1", [hidden], 2, 2, in_scale * w_scale, 0),
        _tensor("middle", [1, hidden], 9, 0, mid_scale, 0),
        _tensor("w2", [FEATURES, hidden], 9, 3, w_scale, 0),
        _tensor("b2", [FEATURES], 2, 4, mid_scale * w_scale, 0),
        _tensor("output", [1, FEATURES], 9, 0, out_scale, out_zp),
    ]
    graph = schema.SubGraphT()
    graph.tensors, graph.inputs, graph.outputs = tensors, [0], [6]
    graph.operators = [_fully_connected([0, 1, 2], 3), _fully_connected([3, 4, 5], 6)]
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = FULLY_CONNECTED
    code.version = 4
    model = schema.ModelT()
    model.version, model.description = 3, b"ad01-shaped test autoencoder"
    model.operatorCodes, model.subgraphs = [code], [graph]
    model.buffers = [_buffer(None), _buffer(w1), _buffer(b1), _buffer(w2), _buffer(b2)]
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


FILE_SHAPE = (200, 128)  # the runner's ad01 files: 200 frames x 128 log-mel bins, float32
WINDOW_BYTES, STRIDE_BYTES = 2560, 512  # y_labels.csv's bytes_to_send and stride: 196 windows a file

CARD = """
name = "ad01_test"
title = "an ad01-shaped test autoencoder"
task = "anomaly_detection"
[file]
name = "{name}"
[source]
kind = "path"
path = "{path}"
[preprocessing]
pipeline = "mlperf-tiny-files"
[output]
kind = "reconstruction_mse"
positive_index = 1
labels = ["normal", "anomaly"]
threshold = {threshold}
[eembc]
model = "ad01"
input = "float32"
"""


def write_ad01_setup(folder, files: int = 4, seed: int = 3, threshold: float = 100.0):
    """The test autoencoder, a card pointing at it (`path` source) and a runner-format ad01 dataset of
    `files` spectrograms (even: normal, odd: anomaly, louder and wider); returns (card path, dataset folder)."""
    from pathlib import Path

    folder = Path(folder)
    model = folder / "ad01_test.tflite"
    model.write_bytes(autoencoder_model())
    card = folder / "ad01_test.toml"
    card.write_text(CARD.format(name=model.name, path=model, threshold=threshold))
    dataset = folder / "ad01"
    dataset.mkdir()
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(files):
        label = i % 2
        values = rng.normal(30 + 10 * label, 8 + 4 * label, FILE_SHAPE).astype(np.float32)
        name = f"{'anomaly' if label else 'normal'}_id_00_{i:08d}_hist_numpy.bin"
        values.tofile(dataset / name)
        rows.append(f"{name},2,{label},{WINDOW_BYTES},{STRIDE_BYTES}")
    (dataset / "y_labels.csv").write_text("\n".join(rows) + "\n")
    return card, dataset
