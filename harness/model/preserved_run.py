"""One LiteRT invoke that keeps every tensor (experimental_preserve_all_tensors): each operator's outputs as they
were after it ran, with the graph's tensor names and quantization, for comparisons layer by layer.

The default delegate (XNNPACK) is left out: inside a delegate the intermediate tensors are not kept."""

import warnings
from dataclasses import dataclass

import numpy as np


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
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        with warnings.catch_warnings():  # LiteRT warns that preserving every tensor is for debugging: it is
            warnings.simplefilter("ignore")
            self._interpreter = Interpreter(
                model_content=model_bytes,
                experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                experimental_preserve_all_tensors=True,
            )
        self._interpreter.allocate_tensors()
        self.tensors = {t["index"]: _graph_tensor(t) for t in self._interpreter.get_tensor_details()}
        self.operators = [
            GraphOperator(op["index"], op["op_name"], tuple(op["inputs"]), tuple(op["outputs"]))
            for op in self._interpreter._get_ops_details()
        ]
        self.inputs = tuple(d["index"] for d in self._interpreter.get_input_details())
        self.outputs = tuple(d["index"] for d in self._interpreter.get_output_details())

    def constant(self, index: int) -> np.ndarray:
        """A constant tensor's values (a weight, a bias), as the model holds them."""
        return np.array(self._interpreter.get_tensor(index))

    def run(self, tensor: np.ndarray) -> dict[int, np.ndarray]:
        """Tensor index -> its values (a copy) for the model's input and every operator's outputs."""
        self._interpreter.set_tensor(self.inputs[0], tensor.reshape(self.tensors[self.inputs[0]].shape))
        self._interpreter.invoke()
        wanted = {self.inputs[0], *(index for op in self.operators for index in op.outputs)}
        return {index: np.array(self._interpreter.get_tensor(index)) for index in wanted}


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
