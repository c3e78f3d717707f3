"""Deliberately changed models for tests: swap a classifier's two output classes."""

import flatbuffers
import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

CLASSIFIER_OPS = {3, 9}  # CONV_2D, FULLY_CONNECTED
DTYPES = {9: np.int8, 2: np.int32, 3: np.uint8, 0: np.float32}


def _swap_rows(model, tensor_index: int) -> None:
    graph = model.subgraphs[0]
    tensor = graph.tensors[tensor_index]
    buffer = model.buffers[tensor.buffer]
    values = np.frombuffer(bytes(buffer.data), DTYPES[tensor.type]).reshape(tuple(tensor.shape)).copy()
    values[[0, 1]] = values[[1, 0]]
    buffer.data = np.frombuffer(values.tobytes(), np.uint8)
    quant = tensor.quantization
    if quant is not None and quant.scale is not None and len(quant.scale) == 2:
        quant.scale = quant.scale[::-1].copy()
        quant.zeroPoint = quant.zeroPoint[::-1].copy()


def swap_output_classes(data: bytes) -> bytes:
    """The same model with its two output classes exchanged: every prediction inverts."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    graph = model.subgraphs[0]
    last = [op for op in graph.operators if model.operatorCodes[op.opcodeIndex].builtinCode in CLASSIFIER_OPS][-1]
    for index in last.inputs[1:3]:
        if index >= 0:
            _swap_rows(model, index)
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def replace_first_operator(data: bytes, builtin_code: int) -> bytes:
    """The same model with its first operator's code replaced (e.g. by one TFLM has no kernel for)."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    code = model.operatorCodes[model.subgraphs[0].operators[0].opcodeIndex]
    code.builtinCode = builtin_code
    code.deprecatedBuiltinCode = min(builtin_code, 127)
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def mutate(data: bytes, change) -> bytes:
    """The model after `change(model, subgraph)` edits its unpacked object tree in place."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    change(model, model.subgraphs[0])
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
