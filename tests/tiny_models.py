"""Small int8 classifiers written as .tflite files for tests whose real model is not among the fixtures
(the MLPerf Tiny kws01 and ic01 reference models): one fully connected layer and a softmax, with the
reference models' tensor types and quantization, so TFLM and LiteRT run them as they run the real ones."""

import flatbuffers
import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

FULLY_CONNECTED, SOFTMAX = 9, 25
INT8, INT32 = 9, 2


def _quantization(scale: float, zero_point: int) -> schema.QuantizationParametersT:
    q = schema.QuantizationParametersT()
    q.scale, q.zeroPoint = [scale], [zero_point]
    return q


def _tensor(name: str, shape, dtype: int, buffer: int, scale: float, zero_point: int) -> schema.TensorT:
    t = schema.TensorT()
    t.name, t.shape, t.type, t.buffer = name.encode(), list(shape), dtype, buffer
    t.quantization = _quantization(scale, zero_point)
    return t


def _buffer(data: bytes = b"") -> schema.BufferT:
    b = schema.BufferT()
    b.data = np.frombuffer(data, np.uint8) if data else None
    return b


def _operator(code: int, inputs, outputs, options_type: int, options) -> schema.OperatorT:
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = code, list(inputs), list(outputs)
    op.builtinOptionsType, op.builtinOptions = options_type, options
    return op


def int8_classifier(input_shape, classes: int, input_quantization: tuple[float, int], seed: int = 0) -> bytes:
    """int8 input of `input_shape` -> fully connected -> int8 softmax (scale 1/256, zero point -128)."""
    features = int(np.prod(input_shape))
    in_scale, in_zero = input_quantization
    rng = np.random.default_rng(seed)
    weights = rng.integers(-3, 4, (classes, features), dtype=np.int8)
    w_scale = 0.001
    bias = np.zeros(classes, np.int32)
    logit_scale = 0.05  # logits of a few units (+-6.35): softmax scores spread over the classes

    codes = []
    for builtin in (FULLY_CONNECTED, SOFTMAX):
        code = schema.OperatorCodeT()
        code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, builtin, 1
        codes.append(code)
    graph = schema.SubGraphT()
    graph.tensors = [
        _tensor("input", input_shape, INT8, 1, in_scale, in_zero),
        _tensor("weights", (classes, features), INT8, 2, w_scale, 0),
        _tensor("bias", (classes,), INT32, 3, in_scale * w_scale, 0),
        _tensor("logits", (1, classes), INT8, 4, float(logit_scale), 0),
        _tensor("scores", (1, classes), INT8, 5, 1 / 256, -128),
    ]
    fc = schema.FullyConnectedOptionsT()
    softmax = schema.SoftmaxOptionsT()
    softmax.beta = 1.0
    graph.operators = [
        _operator(0, (0, 1, 2), (3,), schema.BuiltinOptions.FullyConnectedOptions, fc),
        _operator(1, (3,), (4,), schema.BuiltinOptions.SoftmaxOptions, softmax),
    ]
    graph.inputs, graph.outputs = [0], [4]
    model = schema.ModelT()
    model.version, model.operatorCodes, model.subgraphs = 3, codes, [graph]
    model.buffers = [_buffer(), _buffer(), _buffer(weights.tobytes()), _buffer(bias.tobytes()), _buffer(), _buffer()]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
