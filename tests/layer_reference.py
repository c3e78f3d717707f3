"""Per-operator references for layer-trace tests, computed here from the TFLM host interpreter with every tensor
kept (preserve-all-tensors), digested with numpy and zlib alone: what a device's trace must equal."""

import hashlib
import zlib
from pathlib import Path

import numpy as np
from tflite_micro.python.tflite_micro import runtime
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from tests.conftest import FIXTURE_MODELS

HOST_ARENA = 64 << 20  # every tensor kept: more than any fixture model's tensors together


def digest(array: np.ndarray) -> tuple:
    """(dtype name, bytes, CRC-32, min, max, in-order sum) of a tensor as it lies in memory."""
    data = np.ascontiguousarray(array)
    flat = data.reshape(-1)
    if flat.size == 0:
        return (data.dtype.name, 0, zlib.crc32(b""), 0, 0, 0)
    if data.dtype.kind == "f":
        wide = flat.astype(np.float64)
        total = float(np.add.accumulate(wide)[-1])  # in element order, as a device sums (np.sum pairs)
        return (data.dtype.name, data.nbytes, zlib.crc32(data.tobytes()), wide.min(), wide.max(), total)
    wide = flat.astype(np.int64)
    return (data.dtype.name, data.nbytes, zlib.crc32(data.tobytes()), int(wide.min()), int(wide.max()), int(wide.sum()))


def device_digest(output) -> tuple:
    """The same tuple from a device's record output (harness.link.layer_trace.LayerOutput)."""
    from harness.tensors import DTYPES

    d = output.digest
    return (np.dtype(DTYPES[d.dtype][1]).name, d.bytes, d.crc32, d.minimum, d.maximum, d.total)


def host_trace(model_data: bytes, tensor: np.ndarray) -> list[tuple[str, list[tuple[int, tuple]]]]:
    """(operator name, [(tensor index, digest)…]) for each operator of the main graph, in order."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(model_data), 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    interpreter = runtime.Interpreter.from_bytes(
        model_data, arena_size=HOST_ARENA, intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors
    )
    interpreter.set_input(tensor, 0)
    interpreter.invoke()
    trace = []
    for op in model.subgraphs[0].operators:
        code = model.operatorCodes[op.opcodeIndex]
        name = names[max(code.builtinCode, code.deprecatedBuiltinCode)]
        outputs = [(int(t), digest(interpreter.GetTensor(int(t), 0)["tensor_data"])) for t in op.outputs]
        trace.append((name, outputs))
    return trace


def device_trace(records) -> list[tuple[str, list[tuple[int, tuple]]]]:
    return [(r.op_type, [(o.tensor_index, device_digest(o)) for o in r.outputs]) for r in records]


def first_difference(left, right) -> int | None:
    return next((i for i, (a, b) in enumerate(zip(left, right, strict=True)) if a != b), None)


def one_input(model_data: bytes, seed: int = 7) -> np.ndarray:
    """A random input of the model's input tensor (floats in 0..255, as raw pixels)."""
    interpreter = runtime.Interpreter.from_bytes(model_data, arena_size=HOST_ARENA)
    details = interpreter.get_input_details(0)
    dtype, shape = np.dtype(details["dtype"]), tuple(int(d) for d in details["shape"])
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        return rng.uniform(0, 255, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def fixture_card_models() -> dict[str, Path]:
    """Every model card whose .tflite the shared fixtures hold (matching its pinned SHA-256), by card name."""
    from harness.model.cards import all_cards

    found = {}
    for name, card in all_cards().items():
        if not card.file_name.endswith(".tflite") or not FIXTURE_MODELS.is_dir():
            continue
        candidates = [FIXTURE_MODELS / card.mirror_path] if card.mirror_path else []
        for path in [*candidates, *sorted(FIXTURE_MODELS.rglob(card.file_name))]:
            if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == card.sha256:
                found[name] = path
                break
    return found
