"""`harness inspect`: what a model needs before it meets a board — operators, parameters, MACs per
layer, tensors, flatbuffer size, a host arena estimate, and whether it fits each board."""

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.boards import Board
from harness.model.deployable import CODE_ALLOWANCE_BYTES, arena_estimate
from harness.model.tflite_file import TfliteModel, model_operators

_CONV, _DEPTHWISE, _FULLY_CONNECTED = "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"


@dataclass(frozen=True)
class Layer:
    index: int
    operator: str
    output_shape: list[int]
    macs: int


@dataclass(frozen=True)
class Fit:
    board: str
    flash_needed: int
    flash_available: int
    arena_needed: int
    arena_available: int

    @property
    def fits(self) -> bool:
        return self.flash_needed <= self.flash_available and self.arena_needed <= self.arena_available


@dataclass
class Inspection:
    model: str
    file: str
    sha256: str
    flatbuffer_bytes: int
    input: str
    output: str
    operators: dict[str, int]
    parameters: int
    macs: int
    layers: list[Layer]
    arena_estimate: int
    arena_source: str = "64-bit host estimate (TFLM host interpreter, smallest arena that runs)"
    fits: list[Fit] | None = None

    def as_dict(self) -> dict:
        data = asdict(self)
        if self.fits is not None:
            data["fits"] = [asdict(f) | {"fits": f.fits} for f in self.fits]
        return data


def _macs(name: str, inputs: list, outputs: list) -> int:
    out = outputs[0]
    if name == _CONV:  # weights [out_c, kh, kw, in_c]
        return int(np.prod(out)) * int(np.prod(inputs[1][1:]))
    if name == _DEPTHWISE:  # weights [1, kh, kw, out_c]
        return int(np.prod(out)) * int(inputs[1][1] * inputs[1][2])
    if name == _FULLY_CONNECTED:  # weights [out, in]
        return int(np.prod(out[:-1]) if len(out) > 1 else 1) * int(np.prod(inputs[1]))
    return 0


def _shape(tensor) -> list[int]:
    """A tensor's shape as plain ints (JSON numbers, not numpy scalars); a scalar's is []."""
    return [int(d) for d in (tensor.shape if tensor.shape is not None else ())]


def _shown(path: Path | str) -> str:
    """A path as text: bytes of a file name that are not UTF-8 shown escaped (\\xff), never as lone surrogates
    a JSON reader would refuse."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def inspect_model(model: TfliteModel, boards: list[Board]) -> Inspection:
    flat = schema.ModelT.InitFromPackedBuf(bytearray(model.data), 0)
    graph = flat.subgraphs[0]
    names = model_operators(model.data)
    layers, parameters = [], 0
    tensors = graph.tensors or []
    constants = {i for i, t in enumerate(tensors) if flat.buffers[t.buffer].data is not None}
    parameters = sum(int(np.prod(_shape(tensors[i]), dtype=np.int64)) for i in constants)
    for index, op in enumerate(graph.operators or ()):
        name = names[op.opcodeIndex]
        inputs = [_shape(tensors[i]) if i >= 0 else [] for i in (op.inputs if op.inputs is not None else ())]
        outputs = [_shape(tensors[i]) for i in op.outputs]
        layers.append(Layer(index, name, outputs[0], _macs(name, inputs, outputs)))
    arena = arena_estimate(model)
    fits = None
    if boards:
        fits = [
            Fit(
                b.id,
                len(model.data) + CODE_ALLOWANCE_BYTES,
                b.memory.flash_bytes,
                arena,
                b.firmware.arena_bytes,
            )
            for b in boards
        ]
    return Inspection(
        model=_shown(Path(model.path).name),
        file=_shown(model.path),
        sha256=model.sha256,
        flatbuffer_bytes=len(model.data),
        input=model.input.describe(),
        output=model.output.describe(),
        operators=dict(Counter(layer.operator for layer in layers)),
        parameters=parameters,
        macs=sum(layer.macs for layer in layers),
        layers=layers,
        arena_estimate=arena,
        fits=fits,
    )
