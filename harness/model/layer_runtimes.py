"""The host runtimes a layer trace reads every tensor from: one model, inputs in, any tensor out after invoke."""

import warnings

import numpy as np

from harness.model.references import HOST_ARENA_BYTES
from harness.model.tflm import make_interpreter, native_stderr


class TflmTensors:
    """The TFLM host interpreter in preserve-all-tensors mode (reference kernels, as the tflite-micro package)."""

    def __init__(self, model_data: bytes):
        with native_stderr() as complaints:
            try:
                arena = max(HOST_ARENA_BYTES, 10 * len(model_data))
                self._interpreter = make_interpreter(model_data, arena, preserve_all_tensors=True)
            except Exception as exc:
                failure = exc
            else:
                return
        raise RuntimeError(next((line for line in complaints if line.strip()), str(failure)))

    def input_layouts(self) -> list[tuple[np.dtype, tuple[int, ...]]]:
        details = self._interpreter.get_input_details(0)
        return [(np.dtype(details["dtype"]), tuple(int(d) for d in details["shape"]))]

    def run(self, inputs: list[np.ndarray]) -> None:
        for index, array in enumerate(inputs):
            self._interpreter.set_input(_c_order(array), index)
        with native_stderr() as complaints:
            try:
                self._interpreter.invoke()
            except Exception as exc:
                raise RuntimeError(next((line for line in complaints if line.strip()), str(exc))) from None

    def tensor(self, index: int) -> np.ndarray:
        return np.array(self._interpreter.GetTensor(index, 0)["tensor_data"], copy=True)


class LiteRtTensors:
    """LiteRT with experimental_preserve_all_tensors: its default kernels without delegates (a delegate would
    hide the tensors inside it), or its reference kernels."""

    def __init__(self, model_data: bytes, reference_kernels: bool):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        resolver = OpResolverType.BUILTIN_REF if reference_kernels else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        with warnings.catch_warnings():  # LiteRT warns that preserving every tensor is for debugging: it is
            warnings.simplefilter("ignore")
            self._interpreter = Interpreter(
                model_content=model_data, experimental_op_resolver_type=resolver, experimental_preserve_all_tensors=True
            )
        self._interpreter.allocate_tensors()

    def tensor_details(self) -> list[dict]:
        """LiteRT's description of every tensor: index, name, dtype, shape, quantization_parameters."""
        return self._interpreter.get_tensor_details()

    def operator_details(self) -> list[dict]:
        """Every operator in execution order: index, op_name, inputs, outputs."""
        return self._interpreter._get_ops_details()

    def io_indices(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The model's input and output tensor indices."""
        inputs = tuple(d["index"] for d in self._interpreter.get_input_details())
        return inputs, tuple(d["index"] for d in self._interpreter.get_output_details())

    def input_layouts(self) -> list[tuple[np.dtype, tuple[int, ...]]]:
        return [
            (np.dtype(d["dtype"]), tuple(int(s) for s in d["shape"])) for d in self._interpreter.get_input_details()
        ]

    def run(self, inputs: list[np.ndarray]) -> None:
        for details, array in zip(self._interpreter.get_input_details(), inputs, strict=True):
            self._interpreter.set_tensor(details["index"], _c_order(array))
        self._interpreter.invoke()

    def tensor(self, index: int) -> np.ndarray:
        return np.array(self._interpreter.get_tensor(index), copy=True)


def _c_order(array: np.ndarray) -> np.ndarray:
    """np.ascontiguousarray would make a scalar tensor (shape ()) one-dimensional, which a runtime refuses."""
    return array if array.flags.c_contiguous else array.copy(order="C")


RUNTIMES = {
    "tflm": TflmTensors,
    "litert": lambda model_data: LiteRtTensors(model_data, reference_kernels=False),
    "litert_ref": lambda model_data: LiteRtTensors(model_data, reference_kernels=True),
}
