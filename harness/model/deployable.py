"""Can this model go on that board? The checks every device command makes before it starts: integer
compute, a TFLM kernel for every operator, and room in flash and RAM. Each failure is a UserError
naming the fix."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness import reading
from harness.boards import Board
from harness.errors import UserError
from harness.model.arena_probe import NO_ARENA
from harness.model.tflite_file import TfliteModel, model_operators, model_operators_of
from harness.paths import cache_dir

PROBE_TIMEOUT_SECONDS = 120
# Firmware code besides the model (TFLM with a few kernels, the protocol core, the HAL): a planning
# figure from our QEMU builds (~65 KB with CMSIS-NN, ~100 KB with reference kernels), not a measurement.
CODE_ALLOWANCE_BYTES = 128 * 1024
_MISSING_OP = re.compile(r"Didn't find op for builtin opcode '(\w+)'")
_UNKNOWN_BUILTIN = re.compile(r"Op builtin_code out of range: (\d+)")
_CUSTOM_MISSING = re.compile(r"Failed to get registration from op code CUSTOM")
_FLOATS = (schema.TensorType.FLOAT32, schema.TensorType.FLOAT16)
_DEQUANTIZE = schema.BuiltinOperator.DEQUANTIZE
_CUSTOM = schema.BuiltinOperator.CUSTOM


def _probe(command: list[str], tflite: Path, step: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise UserError(
            f"{Path(tflite).name}: {step} on the TFLM host interpreter took over {PROBE_TIMEOUT_SECONDS} s; "
            "check the model's shapes or re-export it"
        ) from None


def float_weight_operators(model: TfliteModel) -> list[str]:
    """Operators that compute with float constants (weights, biases): the mark of a float model.
    float32 constants count, and so do float16 ones, which a DEQUANTIZE widens to float32 for the
    operator that uses them. A model with float input and output around int8 layers (as MLPerf Tiny's
    VWW) has none."""
    flat = schema.ModelT.InitFromPackedBuf(bytearray(model.data), 0)
    graph = flat.subgraphs[0]
    names = model_operators(model.data)
    tensors = graph.tensors or []

    def constant(index: int) -> bool:
        return index >= 0 and flat.buffers[tensors[index].buffer].data is not None

    floats = {i for i, t in enumerate(tensors) if t.type in _FLOATS and constant(i)}
    operators = list(graph.operators or ())
    for op in operators:  # float16 (or float32) weights widened at run time are float weights still
        code = flat.operatorCodes[op.opcodeIndex]
        if max(code.builtinCode, code.deprecatedBuiltinCode) == _DEQUANTIZE and any(i in floats for i in op.inputs):
            floats.update(op.outputs)
    found = set()
    for op in operators:
        code = flat.operatorCodes[op.opcodeIndex]
        if max(code.builtinCode, code.deprecatedBuiltinCode) == _DEQUANTIZE:
            continue
        if any(i in floats for i in (op.inputs if op.inputs is not None else ())):
            found.add(names[op.opcodeIndex])
    return sorted(found)


def _custom_operators(tflite: Path) -> list[str]:
    """The custom operators' names, a name that is not UTF-8 shown with its bytes escaped."""
    flat = schema.ModelT.InitFromPackedBuf(bytearray(reading.read_bytes(tflite, reading.MODEL)), 0)
    names = model_operators_of(flat)
    return [
        f"custom {names[index] if code.customCode else '(unnamed)'}"
        for index, code in enumerate(flat.operatorCodes or ())
        if max(code.builtinCode, code.deprecatedBuiltinCode) == _CUSTOM
    ]


def missing_tflm_kernels(tflite: Path) -> list[str]:
    """Operators the TFLM host interpreter has no kernel for (probed in a subprocess: it may crash)."""
    probe = (
        "import sys; from harness.model.tflm import make_interpreter; "
        "make_interpreter(open(sys.argv[1], 'rb').read(), 64 << 20)"
    )
    done = _probe([sys.executable, "-c", probe, str(tflite)], tflite, "the operator check")
    log = done.stdout + done.stderr
    missing = set(_MISSING_OP.findall(log))
    missing.update(f"builtin code {code} (unknown to TFLM)" for code in _UNKNOWN_BUILTIN.findall(log))
    if _CUSTOM_MISSING.search(log):
        missing.update(_custom_operators(tflite) or ["a custom operator"])
    return sorted(missing)


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
            f"{model.path.name} is a float model ({', '.join(floats)} compute with float weights) where an int8 "
            "model is needed; quantize it first: "
            "`harness models convert --card CARD --model FLOAT_MODEL --out MODEL.tflite`"
        )


def arena_estimate(model: TfliteModel) -> int:
    """The smallest arena that runs (a 64-bit host estimate), found in a subprocess because the host
    interpreter may crash on a probe; cached by the model's hash, as it takes a few seconds."""
    cached = cache_dir() / "arena" / f"{model.sha256[:24]}.txt"
    if cached.is_file():
        text = reading.read_text(cached, reading.TEXT).strip()
        if text.isascii() and text.isdigit():  # else damaged: probed again and rewritten
            return int(text)
    require_tflm_kernels(model)
    done = _probe([sys.executable, "-m", "harness.model.arena_probe", str(model.path)], model.path, "the arena probe")
    if done.returncode == NO_ARENA and done.stdout.strip().isdigit():
        raise UserError(
            f"{model.path.name}: no arena up to {int(done.stdout):,} bytes runs this model on the TFLM host "
            "interpreter; check its shapes (a huge or dynamic dimension) or re-export it"
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
    if flash_needed > board.memory.flash_bytes:
        raise UserError(
            f"{model.path.name} needs ~{flash_needed:,} bytes of flash with the firmware, {board.id} has "
            f"{board.memory.flash_bytes:,}; choose a smaller model or a larger board (see `harness models inspect`)"
        )
    arena_available = board.firmware.arena_bytes
    arena_needed = arena_estimate(model)
    if arena_available and arena_needed > arena_available:
        raise UserError(
            f"{model.path.name} needs a ~{arena_needed:,}-byte arena (host estimate), {board.id} has "
            f"{arena_available:,}; choose a smaller model or a larger board (see `harness models inspect`)"
        )


def require_deployable(model: TfliteModel, board: Board) -> None:
    """Everything a device command checks before the board starts. The virtual board has no size
    limit, and its loader names a missing kernel itself."""
    require_integer(model)
    if board.size_limited:
        require_fit(model, board)
