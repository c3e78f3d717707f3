"""Can this model go on that board? The checks every device command makes before it starts: integer
compute, a TFLM kernel for every operator, and room in flash and RAM. Each failure is a UserError
naming the fix."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.boards import Board
from harness.errors import UserError
from harness.firmware.tflm_tree import model_operators
from harness.model.tflite_file import TfliteModel
from harness.paths import cache_dir

PROBE_TIMEOUT_SECONDS = 120
# Firmware code besides the model (TFLM with a few kernels, the protocol core, the HAL): a planning
# figure from our QEMU builds (~65 KB with CMSIS-NN, ~100 KB with reference kernels), not a measurement.
CODE_ALLOWANCE_BYTES = 128 * 1024
_MISSING_OP = re.compile(r"Didn't find op for builtin opcode '(\w+)'")
_FLOAT32 = schema.TensorType.FLOAT32


def float_weight_operators(model: TfliteModel) -> list[str]:
    """Operators that compute with float32 constants (weights, biases): the mark of a float model.
    A model with float input and output around int8 layers (as MLPerf Tiny's VWW) has none."""
    flat = schema.ModelT.InitFromPackedBuf(bytearray(model.data), 0)
    graph = flat.subgraphs[0]
    names = model_operators(model.data)
    found = []
    for op in graph.operators or ():
        for index in op.inputs if op.inputs is not None else ():
            tensor = graph.tensors[index] if index >= 0 else None
            if tensor is not None and tensor.type == _FLOAT32 and flat.buffers[tensor.buffer].data is not None:
                found.append(names[op.opcodeIndex])
                break
    return sorted(set(found))


def missing_tflm_kernels(tflite: Path) -> list[str]:
    """Operators the TFLM host interpreter has no kernel for (probed in a subprocess: it may crash)."""
    probe = (
        "import sys; from harness.model.tflm import make_interpreter; "
        "make_interpreter(open(sys.argv[1], 'rb').read(), 64 << 20)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tflite)], capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS
    )
    return sorted(set(_MISSING_OP.findall(done.stdout + done.stderr)))


def require_tflm_kernels(model: TfliteModel) -> None:
    missing = missing_tflm_kernels(model.path)
    if missing:
        raise UserError(
            f"{model.path.name} uses operators TFLM has no kernel for: {', '.join(missing)}; "
            "replace those layers (or keep them on the host) and convert again"
        )


def require_integer(model: TfliteModel) -> None:
    floats = float_weight_operators(model)
    if floats:
        raise UserError(
            f"{model.path.name} is a float model ({', '.join(floats)} compute with float32 weights) where an int8 "
            "model is needed; quantize it first: harness convert --card CARD --model FLOAT_MODEL --out MODEL.tflite"
        )


def arena_estimate(model: TfliteModel) -> int:
    """The smallest arena that runs (a 64-bit host estimate), found in a subprocess because the host
    interpreter may crash on a probe; cached by the model's hash, as it takes a few seconds."""
    cached = cache_dir() / "arena" / f"{model.sha256[:24]}.txt"
    if cached.is_file():
        return int(cached.read_text())
    require_tflm_kernels(model)
    done = subprocess.run(
        [sys.executable, "-m", "harness.model.arena_probe", str(model.path)],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_SECONDS,
    )
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        raise UserError(f"{model.path.name}: the TFLM host interpreter cannot run this model (arena probe failed)")
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{np.random.default_rng().integers(1 << 30)}.partial")
    partial.write_text(done.stdout.strip())
    partial.replace(cached)
    return int(done.stdout.strip())


def require_fit(model: TfliteModel, board: Board) -> None:
    """Flash (model + a code allowance) and the board's arena against the model's needs."""
    flash_needed = len(model.data) + CODE_ALLOWANCE_BYTES
    if flash_needed > board.flash_bytes:
        raise UserError(
            f"{model.path.name} needs ~{flash_needed:,} bytes of flash with the firmware, {board.id} has "
            f"{board.flash_bytes:,}; choose a smaller model or a larger board (see `harness inspect`)"
        )
    arena_available = int(board.firmware.get("arena_bytes", 0))
    arena_needed = arena_estimate(model)
    if arena_available and arena_needed > arena_available:
        raise UserError(
            f"{model.path.name} needs a ~{arena_needed:,}-byte arena (host estimate), {board.id} has "
            f"{arena_available:,}; choose a smaller model or a larger board (see `harness inspect`)"
        )


def require_deployable(model: TfliteModel, board: Board) -> None:
    """Everything a device command checks before the board starts. The virtual board has no size
    limit, and its loader names a missing kernel itself."""
    require_integer(model)
    if board.kind != "virtual":
        require_fit(model, board)
