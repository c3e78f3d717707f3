"""Layer traces on the virtual board and the hosted HALs: each operator's outputs, computed as the host reference
computes them (harness/model/layer_refs.py: the TFLM host interpreter keeping every tensor), go in order to the
device core's trace sink (firmware/core/hp_trace.c), which digests and packs them exactly as on a microcontroller.

A planted fault (HARNESS_PLANT_FAULT_OP=N, a test and debug aid, docs/debug.md) is the host reference's
`perturb_op=N`: operator N's first output gets 1 added to its first element and the later operators compute from
it (the graph cut after N), so the board's trace and its output carry the fault as a broken kernel's would.
"""

import ctypes
import os
from pathlib import Path

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import UserError
from harness.model.layer_refs import OperatorOutputs, operator_outputs
from harness.native import TraceOutput, device_core
from harness.tensors import DTYPE_CODES

PLANT_FAULT_ENV = "HARNESS_PLANT_FAULT_OP"


def planted_fault_op(model_path: Path | None) -> int:
    """The operator of the model's main graph HARNESS_PLANT_FAULT_OP names, or -1 (unset). Read where the board
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


class GraphTracer:
    """One model's main graph, operator by operator, for a board's traced invokes."""

    def __init__(self, model_data: bytes, plant_fault_op: int = -1):
        self._data = model_data
        self._perturb = plant_fault_op if plant_fault_op >= 0 else None
        graph = schema.ModelT.InitFromPackedBuf(bytearray(model_data), 0).subgraphs[0]
        self._output_index = int(graph.outputs[0])

    def run(self, input_bytes: bytes) -> tuple[list[OperatorOutputs], np.ndarray | None]:
        """Every operator's outputs, and the model's output where an operator wrote it (None: run the model)."""
        operators = operator_outputs(self._data, input_bytes, perturb_op=self._perturb)
        written = {t.tensor_index: t.array for op in operators for t in op.outputs}
        return operators, written.get(self._output_index)


def hand_to_sink(sink: int, operator: OperatorOutputs) -> None:
    """One operator's outputs to the C core's trace sink, which digests and packs them."""
    arrays = [np.ascontiguousarray(t.array) for t in operator.outputs]
    entries = (TraceOutput * max(1, len(arrays)))()
    for entry, output, array in zip(entries, operator.outputs, arrays, strict=False):
        entry.data = array.ctypes.data
        entry.bytes = array.nbytes
        entry.dtype = DTYPE_CODES[array.dtype]
        entry.tensor_index = output.tensor_index
    device_core().hp_trace_operator(ctypes.c_void_p(sink), operator.op_type.encode(), entries, len(arrays))
