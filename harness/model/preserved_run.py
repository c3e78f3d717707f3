"""A model's graph as LiteRT describes it (tensor names, quantization, operators), run keeping every tensor
(harness/model/layer_runtimes.py LiteRtTensors: its default kernels without delegates), for comparisons layer by
layer."""

from dataclasses import dataclass

import numpy as np

from harness.model.layer_runtimes import LiteRtTensors


@dataclass(frozen=True)
class GraphTensor:
    index: int
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    scales: np.ndarray  # empty: not quantized; one: per tensor; several: per channel along `axis`
    zero_points: np.ndarray
    axis: int

    @property
    def quantized(self) -> bool:
        return self.scales.size > 0 and np.issubdtype(self.dtype, np.integer)


@dataclass(frozen=True)
class GraphOperator:
    index: int
    name: str  # the builtin operator's name, CONV_2D
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


class PreservedGraph:
    """A model loaded once; run() invokes it on one input and returns every operator output's values."""

    def __init__(self, model_bytes: bytes):
        self._runtime = LiteRtTensors(model_bytes, reference_kernels=False)
        self.tensors = {t["index"]: _graph_tensor(t) for t in self._runtime.tensor_details()}
        self.operators = [
            GraphOperator(op["index"], op["op_name"], tuple(op["inputs"]), tuple(op["outputs"]))
            for op in self._runtime.operator_details()
        ]
        self.inputs, self.outputs = self._runtime.io_indices()

    def constant(self, index: int) -> np.ndarray:
        """A constant tensor's values (a weight, a bias), as the model holds them."""
        return self._runtime.tensor(index)

    def run(self, tensor: np.ndarray) -> dict[int, np.ndarray]:
        """Tensor index -> its values (a copy) for the model's input and every operator's outputs."""
        self._runtime.run([tensor.reshape(self.tensors[self.inputs[0]].shape)])
        wanted = {self.inputs[0], *(index for op in self.operators for index in op.outputs)}
        return {index: self._runtime.tensor(index) for index in wanted}


def _graph_tensor(detail: dict) -> GraphTensor:
    quantization = detail["quantization_parameters"]
    return GraphTensor(
        index=detail["index"],
        name=detail["name"],
        dtype=np.dtype(detail["dtype"]),
        shape=tuple(int(n) for n in detail["shape"]),
        scales=np.asarray(quantization["scales"], dtype=np.float64),
        zero_points=np.asarray(quantization["zero_points"], dtype=np.int64),
        axis=int(quantization["quantized_dimension"]),
    )
