"""Layer traces on the virtual board and the hosted HALs: the TFLM host interpreter runs the model keeping every
tensor (preserve-all-tensors), and each operator's outputs go, in order, to the device core's trace sink
(firmware/core/hp_trace.c), which digests and packs them exactly as on a microcontroller.

A planted fault (HARNESS_SIM_PLANT_FAULT_OP=N, a test and debug aid, docs/debug.md) adds 1 to the first element
of operator N's first output after it runs. The host interpreter cannot stop between operators, so the graph is
split there: the rest of the graph (operators N+1 on, as a model of its own whose inputs are the tensors they read
that came before) runs on the perturbed tensor, and every later operator sees the fault as it would on a board.
"""

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import flatbuffers
import numpy as np
from tflite_micro.python.tflite_micro import runtime
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import UserError
from harness.model.tflite_file import model_operators_of
from harness.native import TraceOutput, device_core
from harness.tensors import DTYPE_CODES

PLANT_FAULT_ENV = "HARNESS_SIM_PLANT_FAULT_OP"
PRESERVE_ALL = runtime.InterpreterConfig.kPreserveAllTensors
Outputs = list[tuple[int, np.ndarray]]  # (tensor index, its value) per output of one operator


def planted_fault_op(model_path: Path | None) -> int:
    """The operator of the model's main graph HARNESS_SIM_PLANT_FAULT_OP names, or -1 (unset). Read where the board
    process is started, so a bad value is refused in one line before anything starts."""
    text = os.environ.get(PLANT_FAULT_ENV, "").strip()
    if not text:
        return -1
    if not text.isdigit():
        raise UserError(f"{PLANT_FAULT_ENV}={text!r} is not an operator index; set a whole number or unset it")
    if model_path is None:
        raise UserError(f"{PLANT_FAULT_ENV} perturbs a model's operator, and this board runs none; unset it")
    operators = len(schema.ModelT.InitFromPackedBuf(bytearray(Path(model_path).read_bytes()), 0).subgraphs[0].operators)
    if int(text) >= operators:
        raise UserError(
            f"{PLANT_FAULT_ENV}={text}: the model has {operators} operators (0 to {operators - 1}); name one of them"
        )
    return int(text)


def _tensor_bytes(model: schema.ModelT) -> int:
    tensors = model.subgraphs[0].tensors or []
    return sum(8 * int(np.prod(t.shape if t.shape is not None else [])) for t in tensors)


class GraphTracer:
    """The main graph of one model run operator by operator on the host interpreter (every tensor kept)."""

    def __init__(self, model_data: bytes, arena_bytes: int, plant_fault_op: int = -1):
        self._data = model_data
        model = schema.ModelT.InitFromPackedBuf(bytearray(model_data), 0)
        self._names = model_operators_of(model)
        graph = model.subgraphs[0]
        self.operators = [(self._names[op.opcodeIndex], [int(t) for t in op.outputs]) for op in graph.operators]
        self._output_index = int(graph.outputs[0])
        self._arena = arena_bytes + _tensor_bytes(model)  # room to keep every tensor
        self.plant_fault_op = plant_fault_op
        if plant_fault_op >= len(self.operators):
            raise UserError(
                f"{PLANT_FAULT_ENV}={plant_fault_op}: the model has {len(self.operators)} operators (0 to "
                f"{len(self.operators) - 1}); name one of them"
            )
        self._whole = self._interpreter(model_data)
        self._rest = self._rest_inputs = None
        if plant_fault_op >= 0 and plant_fault_op + 1 < len(self.operators):
            self._rest, self._rest_inputs = self._split_after(plant_fault_op)

    def _split_after(self, last: int) -> tuple[runtime.Interpreter, list[int]]:
        """The graph after operator `last`, as a model whose inputs are the tensors its operators read that
        operators 0..last wrote or the model took in."""
        model = schema.ModelT.InitFromPackedBuf(bytearray(self._data), 0)
        graph = model.subgraphs[0]
        earlier = {int(t) for t in graph.inputs} | {int(t) for op in graph.operators[: last + 1] for t in op.outputs}
        rest = graph.operators[last + 1 :]
        inputs = list(dict.fromkeys(int(t) for op in rest for t in op.inputs if int(t) in earlier))
        graph.operators, graph.inputs = rest, np.array(inputs, dtype=np.int32)
        builder = flatbuffers.Builder(len(self._data) + 1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        data = bytes(builder.Output())
        return self._interpreter(data), inputs

    def _interpreter(self, data: bytes) -> runtime.Interpreter:
        return runtime.Interpreter.from_bytes(data, arena_size=self._arena, intrepreter_config=PRESERVE_ALL)

    def run(self, tensor: np.ndarray) -> Iterator[tuple[str, Outputs]]:
        """Each operator's name and outputs, in order; the model's output is then interpreter_output()."""
        self._whole.set_input(tensor, 0)
        self._whole.invoke()
        self._last = self._whole
        self._values = values = {}
        for index, (name, outputs) in enumerate(self.operators):
            source = self._whole if self._rest is None or index <= self.plant_fault_op else self._rest
            if source is self._rest and self._last is not self._rest:
                self._run_rest(values)
            found = [(t, np.array(source.GetTensor(t, 0)["tensor_data"])) for t in outputs]
            if index == self.plant_fault_op and found:
                plant_fault(found[0][1])
            values.update(found)
            yield name, found

    def _run_rest(self, values: dict[int, np.ndarray]) -> None:
        for position, index in enumerate(self._rest_inputs):
            value = values.get(index)
            if value is None:  # a model input
                value = np.array(self._whole.GetTensor(index, 0)["tensor_data"])
            self._rest.set_input(value, position)
        self._rest.invoke()
        self._last = self._rest

    def output(self) -> np.ndarray:
        """The model's output after run(): from the rest of the graph when the fault split it (or the perturbed
        tensor itself when the fault is in the last operator)."""
        if self._last is self._whole and self._output_index in self._values:
            return np.ascontiguousarray(self._values[self._output_index])
        return np.ascontiguousarray(self._last.get_output(0))


def plant_fault(array: np.ndarray) -> None:
    """Add 1 to the first element, in place, as the firmware's planted fault does (firmware/core/hp_trace.c)."""
    raw = array.reshape(-1).view(np.uint8)
    buffer = (ctypes.c_uint8 * raw.size).from_buffer(raw)
    device_core().hp_plant_fault(buffer, raw.size, DTYPE_CODES[array.dtype])


def hand_to_sink(sink: int, name: str, outputs: Outputs) -> None:
    """One operator's outputs to the C core's trace sink, which digests and packs them."""
    arrays = [np.ascontiguousarray(value) for _, value in outputs]
    entries = (TraceOutput * max(1, len(arrays)))()
    for entry, (index, _), array in zip(entries, outputs, arrays, strict=False):
        entry.data = array.ctypes.data
        entry.bytes = array.nbytes
        entry.dtype = DTYPE_CODES[array.dtype]
        entry.tensor_index = index
    device_core().hp_trace_operator(sink, name.encode(), entries, len(arrays))
