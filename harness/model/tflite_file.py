"""Read and validate a .tflite flatbuffer: its single input and output, and its quantization."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import UserError
from harness.tensors import TensorSpec

# The flatbuffer schema numbers float32 and float16 differently from TfLiteType.
_SCHEMA_TO_TFLITE_TYPE = {0: 1, 1: 10}
_DEQUANTIZE = 6


@dataclass(frozen=True)
class TfliteModel:
    path: Path
    data: bytes
    sha256: str
    input: TensorSpec
    output: TensorSpec
    # One quantization step of the output: its own scale, or for a float output that a final
    # DEQUANTIZE produces, the scale of the integer tensor feeding it. None when neither exists.
    output_step: float | None


def _spec(tensor) -> TensorSpec:
    dtype = _SCHEMA_TO_TFLITE_TYPE.get(tensor.type, tensor.type)
    shape = tuple(int(d) for d in (tensor.shape if tensor.shape is not None else ()))
    quant = tensor.quantization
    scale = float(quant.scale[0]) if quant is not None and quant.scale is not None and len(quant.scale) else 0.0
    zero_point = (
        int(quant.zeroPoint[0]) if quant is not None and quant.zeroPoint is not None and len(quant.zeroPoint) else 0
    )
    spec = TensorSpec(dtype, shape, scale, zero_point, 0)
    nbytes = int(np.prod(shape, dtype=np.int64)) * spec.numpy_dtype.itemsize
    return TensorSpec(dtype, shape, scale, zero_point, nbytes)


def _output_step(model, graph) -> float | None:
    out_index = graph.outputs[0]
    out = graph.tensors[out_index]
    spec = _spec(out)
    if spec.is_quantized:
        return spec.scale
    for op in graph.operators or ():
        code = model.operatorCodes[op.opcodeIndex]
        if max(code.builtinCode, code.deprecatedBuiltinCode) == _DEQUANTIZE and op.outputs[0] == out_index:
            source = _spec(graph.tensors[op.inputs[0]])
            return source.scale if source.is_quantized else None
    return None


def read_tflite(path: Path) -> TfliteModel:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"model file {path} does not exist; check the path or run `harness models`")
    data = path.read_bytes()
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise UserError(f"{path} is not a TFLite model (no TFL3 flatbuffer identifier); pass a .tflite file")
    try:
        model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
        graph = model.subgraphs[0]
        if len(graph.inputs) != 1 or len(graph.outputs) != 1:
            raise UserError(
                f"{path} has {len(graph.inputs)} inputs and {len(graph.outputs)} outputs; "
                "protocol v1 runs single-input, single-output models"
            )
        input_spec = _spec(graph.tensors[graph.inputs[0]])
        output_spec = _spec(graph.tensors[graph.outputs[0]])
        output_step = _output_step(model, graph)
    except UserError:
        raise
    except Exception as exc:  # a damaged flatbuffer fails in many ways inside the generated parser
        raise UserError(f"{path} is a corrupt or truncated TFLite model ({type(exc).__name__}); re-export it") from exc
    if input_spec.dtype not in (1, 3, 7, 9) or output_spec.dtype not in (1, 3, 7, 9):
        raise UserError(f"{path}: unsupported tensor types {input_spec.describe()} -> {output_spec.describe()}")
    return TfliteModel(path, data, hashlib.sha256(data).hexdigest(), input_spec, output_spec, output_step)
