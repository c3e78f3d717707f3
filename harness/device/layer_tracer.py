"""Layer traces on the virtual board and the hosted HALs: each operator's outputs, computed as the host reference
computes them (harness/model/layer_refs.py: the TFLM host interpreter keeping every tensor), go in order to the
device core's trace sink (firmware/core/hp_trace.c), which digests and packs them exactly as on a microcontroller.

A planted fault (HARNESS_PLANT_FAULT_OP=N, a test and debug aid, docs/debug.md) is the host reference's
`perturb_op=N`: operator N's first output gets 1 added to its first element and the later operators compute from
it (the graph cut after N), so the board's trace and its output carry the fault as a broken kernel's would.
"""

import ctypes

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.model.layer_refs import OperatorOutputs, operator_outputs
from harness.native import TraceOutput, device_core
from harness.tensors import DTYPE_CODES


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
