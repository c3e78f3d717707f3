"""Read and validate a .tflite flatbuffer: its single input and output, and its quantization."""

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness import reading
from harness.errors import UserError
from harness.tensors import DTYPES, TensorSpec

# The flatbuffer schema numbers float32 and float16 differently from TfLiteType.
_SCHEMA_TO_TFLITE_TYPE = {0: 1, 1: 10}
_DEQUANTIZE = 6
_QUANTIZE = schema.BuiltinOperator.QUANTIZE
_SUPPORTED_IO = (1, 3, 7, 9)  # float32, uint8, int16, int8
_IO_FIX = (
    "the harness runs float32, int8, uint8 or int16 inputs and outputs: convert it to one (harness models convert --io)"
)
# Schema TensorType numbers for names the error message can give when DTYPES has no numpy type.
_SCHEMA_NAMES = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
_BUILTIN_NAMES = {value: name for name, value in vars(schema.BuiltinOperator).items() if not name.startswith("_")}


class UnsupportedType(Exception):
    """A tensor type the harness cannot carry over the link (the model itself is intact)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


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
    # A float input that every one of its consumers quantizes on entry (QUANTIZE ops to one per-tensor
    # integer tensor): that integer tensor. The model computes only from the quantized values.
    input_quantized_as: TensorSpec | None = None


def _spec(tensor) -> TensorSpec:
    # Schema numbers from 10 (FLOAT64 on) are one below their TfLiteType: none of them is carried.
    dtype = _SCHEMA_TO_TFLITE_TYPE.get(tensor.type, tensor.type if tensor.type < 10 else -1)
    if dtype not in DTYPES:
        raise UnsupportedType(_SCHEMA_NAMES.get(tensor.type, f"type {tensor.type}"))
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
        if _builtin(model, op) == _DEQUANTIZE and op.outputs[0] == out_index:
            source = _spec(graph.tensors[op.inputs[0]])
            return source.scale if source.is_quantized else None
    return None


def _builtin(model, op) -> int:
    code = model.operatorCodes[op.opcodeIndex]
    return max(code.builtinCode, code.deprecatedBuiltinCode)


def _input_quantized_as(model, graph) -> TensorSpec | None:
    in_index = graph.inputs[0]
    if _spec(graph.tensors[in_index]).dtype != 1:  # float32 only
        return None
    consumers = [op for op in graph.operators or () if op.inputs is not None and in_index in op.inputs]
    if not consumers or any(_builtin(model, op) != _QUANTIZE for op in consumers):
        return None
    outputs = {op.outputs[0] for op in consumers}
    specs = {_spec(graph.tensors[i]) for i in outputs}
    quant = [graph.tensors[i].quantization for i in outputs]
    per_tensor = all(q is not None and q.scale is not None and len(q.scale) == 1 for q in quant)
    (spec, *others) = specs
    return spec if not others and per_tensor and spec.is_quantized else None


def _check_indices(model, graph) -> None:
    """Every index the harness follows points inside its table: opcodes, tensors (-1 marks an
    omitted optional input) and buffers. A damaged flatbuffer otherwise fails later, far away."""
    tensors = graph.tensors or []
    buffers = model.buffers or []
    codes = model.operatorCodes or []
    for tensor in tensors:
        if not 0 <= tensor.buffer < len(buffers):
            raise ValueError("buffer index out of range")
    for index in [
        *(graph.inputs if graph.inputs is not None else ()),
        *(graph.outputs if graph.outputs is not None else ()),
    ]:
        if not 0 <= index < len(tensors):
            raise ValueError("graph tensor index out of range")
    for op in graph.operators or ():
        if not 0 <= op.opcodeIndex < len(codes):
            raise ValueError("opcode index out of range")
        if op.outputs is None or len(op.outputs) == 0:
            raise ValueError("operator without outputs")
        for index in op.inputs if op.inputs is not None else ():
            if not -1 <= index < len(tensors):
                raise ValueError("operator input index out of range")
        for index in op.outputs:
            if not 0 <= index < len(tensors):
                raise ValueError("operator output index out of range")


def _check_quantization(model) -> None:
    """Every quantization scale is a finite number: a NaN scale makes every score NaN and every prediction 0."""
    for graph_index, graph in enumerate(model.subgraphs or ()):
        for index, tensor in enumerate(graph.tensors or ()):
            quant = tensor.quantization
            scales = quant.scale if quant is not None and quant.scale is not None else ()
            bad = next((float(v) for v in scales if not math.isfinite(v)), None)
            if bad is not None:
                where = f"tensor {index}" + (f" of subgraph {graph_index}" if graph_index else "")
                raise _BadGraph(f"{where} ({_name(tensor)}) has quantization scale {bad}, not a finite number")


def _check_execution_order(model, graph) -> None:
    """Every operator reads only tensors that exist when it runs: the graph's inputs, constants, variables and
    what an earlier operator wrote. TFLM would run a graph that reads a later operator's output (from an
    arena that holds anything); LiteRT refuses it."""
    tensors = graph.tensors or []
    ready = set(graph.inputs if graph.inputs is not None else ())
    ready |= {i for i, t in enumerate(tensors) if t.isVariable or model.buffers[t.buffer].data is not None}
    writer = {out: step for step, op in enumerate(graph.operators or ()) for out in op.outputs}
    names = model_operators_of(model)
    for step, op in enumerate(graph.operators or ()):
        for index in op.inputs if op.inputs is not None else ():
            if index >= 0 and index not in ready and writer.get(index, -1) > step:
                raise _BadGraph(
                    f"operator {step} ({names[op.opcodeIndex]}) reads tensor {index} ({_name(tensors[index])}), "
                    f"which only operator {writer[index]}, later, writes: LiteRT refuses this graph, TFLM would "
                    "run it on whatever the arena holds"
                )
        ready.update(op.outputs)


class _BadGraph(Exception):
    """A model that parses but must not run: the reason, in a person's words."""


def _name(tensor) -> str:
    raw = tensor.name if tensor.name is not None else b""
    return (raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else str(raw)) or "unnamed"


def read_tflite(path: Path) -> TfliteModel:
    path = Path(path)
    data = reading.read_bytes(path, reading.MODEL)
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise UserError(f"{path} is not a TFLite model (no TFL3 flatbuffer identifier); pass a .tflite file")
    try:
        model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
        graph = model.subgraphs[0]
        _check_indices(model, graph)
        if len(graph.inputs) != 1 or len(graph.outputs) != 1:
            raise UserError(
                f"{path} has {len(graph.inputs)} inputs and {len(graph.outputs)} outputs; "
                "protocol v1 runs single-input, single-output models"
            )
        input_spec = _spec(graph.tensors[graph.inputs[0]])
        output_spec = _spec(graph.tensors[graph.outputs[0]])
        output_step = _output_step(model, graph)
        quantized_as = _input_quantized_as(model, graph)
        _check_quantization(model)
        _check_execution_order(model, graph)
    except UserError:
        raise
    except _BadGraph as bad:
        raise UserError(f"{path} cannot be run: {bad}; re-export the model") from None
    except UnsupportedType as exc:
        raise UserError(f"{path}: unsupported {exc.name} input or output tensor; {_IO_FIX}") from None
    except Exception as exc:  # a damaged flatbuffer fails in many ways inside the generated parser
        raise UserError(f"{path} is a corrupt or truncated TFLite model ({type(exc).__name__}); re-export it") from exc
    if input_spec.dtype not in _SUPPORTED_IO or output_spec.dtype not in _SUPPORTED_IO:
        types = f"{input_spec.describe()} -> {output_spec.describe()}"
        raise UserError(f"{path}: unsupported tensor types {types}; {_IO_FIX}")
    digest = hashlib.sha256(data).hexdigest()
    return TfliteModel(path, data, digest, input_spec, output_spec, output_step, quantized_as)


def model_operators(model_data: bytes) -> list[str]:
    """Builtin operator names (or custom codes) in the order the model lists them."""
    return model_operators_of(schema.ModelT.InitFromPackedBuf(bytearray(model_data), 0))


def model_operators_of(model) -> list[str]:
    """model_operators of an unpacked model; a custom code that is not UTF-8 is shown with its bytes escaped."""
    names = []
    for code in model.operatorCodes or ():
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        name = _BUILTIN_NAMES.get(builtin, f"BUILTIN_{builtin}")
        custom = code.customCode
        if name == "CUSTOM" and custom:
            name = custom.decode("utf-8", "backslashreplace") if isinstance(custom, bytes) else str(custom)
        names.append(name)
    return names
