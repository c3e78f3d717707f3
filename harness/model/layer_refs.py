"""Per-operator host references: every operator's output tensors for one input, as a layer trace compares them.

Runtimes: the TFLM host interpreter in its preserve-all-tensors mode, and LiteRT with
experimental_preserve_all_tensors (its optimized kernels without delegates, or its reference kernels).
`perturb_op=N` plants a fault: operator N's first output gets 1 added to its first element (wrapping in the
tensor's type) and the later operators compute from that (harness/model/graph_split.py).
"""

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import UserError
from harness.model.graph_split import SplitModel, split_after
from harness.model.layer_runtimes import RUNTIMES
from harness.model.tflite_file import model_operators_of
from harness.tensor_digest import TensorDigest, tensor_digest


@dataclass(frozen=True)
class TensorOutput:
    tensor_index: int
    name: str
    shape: tuple[int, ...]
    array: np.ndarray


@dataclass(frozen=True)
class OperatorOutputs:
    index: int
    op_type: str  # as TFLM's OpNameFromRegistration names it: the builtin's name, or the custom code
    outputs: tuple[TensorOutput, ...]


@dataclass(frozen=True)
class OperatorDigests:
    index: int
    op_type: str
    outputs: tuple[tuple[int, tuple[int, ...], TensorDigest], ...]  # (tensor_index, shape, digest)


def operator_outputs(
    model_bytes: bytes, input_bytes: bytes, *, perturb_op: int | None = None, runtime: str = "tflm"
) -> list[OperatorOutputs]:
    """Subgraph 0's operators in execution order, each with its output tensors, for one input given as the
    raw bytes of the input tensor (as the device receives them)."""
    if runtime not in RUNTIMES:
        raise UserError(f"no layer reference runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")
    graph = _Graph(model_bytes)
    if len(graph.inputs) != 1:
        raise UserError(f"a layer trace runs models with one input; this model has {len(graph.inputs)}")
    if perturb_op is not None and not 0 <= perturb_op < len(graph.operators):
        last = len(graph.operators) - 1
        raise UserError(f"perturb_op {perturb_op} is not an operator of this model: it has 0..{last}")
    session = RUNTIMES[runtime](model_bytes)
    session.run([_input_array(session.input_layouts()[0], input_bytes)])
    values = {index: session.tensor(index) for index in graph.written()}
    if perturb_op is not None:
        first = graph.operators[perturb_op][1][0]
        values[first] = perturbed(values[first])
        if perturb_op < len(graph.operators) - 1:
            values |= {index: session.tensor(index) for index in graph.inputs}
            values |= run_after(model_bytes, perturb_op, values, runtime=runtime)
    return [
        OperatorOutputs(step, op_type, tuple(graph.output(index, values[index]) for index in outputs))
        for step, (op_type, outputs) in enumerate(graph.operators)
    ]


def operator_digests(model_bytes: bytes, input_bytes: bytes, *, perturb_op: int | None = None) -> list[OperatorDigests]:
    """operator_outputs on the TFLM host interpreter, each output tensor summarised as a board summarises it."""
    return [
        OperatorDigests(
            op.index, op.op_type, tuple((t.tensor_index, t.shape, tensor_digest(t.array)) for t in op.outputs)
        )
        for op in operator_outputs(model_bytes, input_bytes, perturb_op=perturb_op)
    ]


def perturbed(array: np.ndarray) -> np.ndarray:
    """The planted fault, bit for bit as a board plants it (the device core's hp_plant_fault): a float32 element 0
    gets 1.0 added; any other type's element 0, read as a little-endian unsigned number of its width, gets 1
    added, wrapping within that width (so int8 127 becomes -128; a bool's byte 1 becomes 2; another float type's
    first byte alone)."""
    if array.size == 0:
        raise UserError("the perturbed operator's first output is empty: plant the fault in another operator")
    result = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=True)
    flat = result.reshape(-1)
    if flat.dtype == np.float32:
        flat[0] += np.float32(1)
        return result
    width = 1 if flat.dtype.kind == "f" else flat.itemsize
    raw = flat[:1].view(np.uint8)
    value = (int.from_bytes(raw[:width].tobytes(), "little") + 1) % (1 << (8 * width))
    raw[:width] = np.frombuffer(value.to_bytes(width, "little"), np.uint8)
    return result


_SPLITS: OrderedDict[tuple[str, int], SplitModel] = OrderedDict()
_SPLITS_KEPT = 16


def run_after(
    model_bytes: bytes, operator: int, values: dict[int, np.ndarray], *, runtime: str = "tflm"
) -> dict[int, np.ndarray]:
    """The outputs of the operators after `operator` (tensor index -> array, original indices) when they read
    `values` for every tensor written before them (the split model, run on `runtime`)."""
    split = _split(model_bytes, operator)
    session = RUNTIMES[runtime](split.data)
    session.run([values[index] for index in split.inputs])
    return {index: session.tensor(index) for index in split.writes}


def _split(model_bytes: bytes, operator: int) -> SplitModel:
    key = (hashlib.sha256(model_bytes).hexdigest(), operator)
    if key not in _SPLITS:
        _SPLITS[key] = split_after(model_bytes, operator)
        while len(_SPLITS) > _SPLITS_KEPT:
            _SPLITS.popitem(last=False)
    _SPLITS.move_to_end(key)
    return _SPLITS[key]


def _input_array(layout: tuple[np.dtype, tuple[int, ...]], data: bytes) -> np.ndarray:
    dtype, shape = layout
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise UserError(
            f"the input is {len(data)} bytes, but the model's input {dtype.name}{list(shape)} takes {expected}: "
            "pass the raw bytes of one input tensor"
        )
    return np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


class _Graph:
    """Subgraph 0 of a model as the trace needs it: each operator's type and output tensors, and tensor names."""

    def __init__(self, model_bytes: bytes):
        model = schema.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)
        graph = model.subgraphs[0]
        names = model_operators_of(model)
        self.operators = [(names[op.opcodeIndex], tuple(int(i) for i in op.outputs)) for op in graph.operators or ()]
        self.inputs = tuple(int(i) for i in graph.inputs)
        self._tensors = graph.tensors

    def written(self) -> list[int]:
        return [index for _, outputs in self.operators for index in outputs]

    def output(self, index: int, array: np.ndarray) -> TensorOutput:
        raw = self._tensors[index].name or b""
        name = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else str(raw)
        return TensorOutput(index, name, tuple(int(d) for d in array.shape), array)
