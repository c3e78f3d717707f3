"""Host references: the same model run on this machine, on the very input tensors sent to the device."""

from dataclasses import dataclass, field

import numpy as np

from harness.defaults import DEFAULT_REFERENCES
from harness.model.tflite_file import TfliteModel
from harness.model.tflm import make_interpreter, native_stderr

# Generous: host memory is plentiful, and TFLM's host interpreter dies on a too-small arena.
HOST_ARENA_BYTES = 64 << 20


class TflmReference:
    name = "tflm"
    description = "TFLM host interpreter (tflite-micro package, reference kernels)"

    def __init__(self, model: TfliteModel):
        with native_stderr() as complaints:
            try:
                self._interpreter = make_interpreter(model.data, max(HOST_ARENA_BYTES, 10 * len(model.data)))
            except Exception as exc:
                failure = exc
            else:
                return
        raise RuntimeError(next((line for line in complaints if line.strip()), str(failure)))

    def run(self, tensor: np.ndarray) -> bytes:
        self._interpreter.set_input(tensor, 0)
        self._interpreter.invoke()
        return np.ascontiguousarray(self._interpreter.get_output(0)).tobytes()


class LiteRtReference:
    def __init__(self, model: TfliteModel, reference_kernels: bool):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        resolver = OpResolverType.BUILTIN_REF if reference_kernels else OpResolverType.BUILTIN
        self.name = "litert_ref" if reference_kernels else "litert"
        self.description = f"LiteRT ({'reference' if reference_kernels else 'default'} kernels)"
        self._interpreter = Interpreter(model_content=model.data, experimental_op_resolver_type=resolver)
        self._interpreter.allocate_tensors()
        self._input = self._interpreter.get_input_details()[0]["index"]
        self._output = self._interpreter.get_output_details()[0]["index"]

    def run(self, tensor: np.ndarray) -> bytes:
        self._interpreter.set_tensor(self._input, tensor)
        self._interpreter.invoke()
        return np.ascontiguousarray(self._interpreter.get_tensor(self._output)).tobytes()


REFERENCES = {
    "tflm": TflmReference,
    "litert_ref": lambda model: LiteRtReference(model, reference_kernels=True),
    "litert": lambda model: LiteRtReference(model, reference_kernels=False),
}
REASON_CHARS = 160


@dataclass
class ReferenceSet:
    references: list = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # name -> why that reference could not run


def load_references(model: TfliteModel, names=DEFAULT_REFERENCES) -> ReferenceSet:
    """Every reference that accepts the model; the reason for each one that refuses it."""
    result = ReferenceSet()
    for name in names:
        try:
            result.references.append(REFERENCES[name](model))
        except Exception as exc:  # each runtime refuses models in its own way; record why
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if len(first_line) > REASON_CHARS:  # LiteRT repeats its complaint once per tensor
                first_line = first_line[:REASON_CHARS] + "…"
            result.refused[name] = f"{type(exc).__name__}: {first_line}"
    return result
