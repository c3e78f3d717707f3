"""The TFLM host interpreter from the tflite-micro package, and its arena figure."""

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from tflite_micro.python.tflite_micro import runtime

_ARENA_TOTAL = re.compile(r"Arena allocation total (\d+) bytes")


def make_interpreter(model_data: bytes, arena_bytes: int, *, preserve_all_tensors: bool = False) -> runtime.Interpreter:
    """preserve_all_tensors: every tensor keeps its own memory and GetTensor reads it after invoke (a layer
    trace's references); otherwise the arena is planned as on a board and its allocations are recorded."""
    config = runtime.InterpreterConfig
    mode = config.kPreserveAllTensors if preserve_all_tensors else config.kAllocationRecording
    return runtime.Interpreter.from_bytes(model_data, arena_size=arena_bytes, intrepreter_config=mode)


@contextmanager
def native_stderr() -> Iterator[list[str]]:
    """What native code writes to file descriptor 2 inside the block (TFLM reports there), as a
    list of lines filled in when the block ends, instead of on the user's terminal."""
    lines: list[str] = []
    sys.stderr.flush()
    with tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            lines.extend(capture.read().decode(errors="replace").splitlines())


def arena_used_bytes(interpreter: runtime.Interpreter) -> int | None:
    """What the recording allocator reports (a 64-bit host figure), read from its stderr dump."""
    with native_stderr() as lines:
        interpreter.print_allocations()
    match = _ARENA_TOTAL.search("\n".join(lines))
    return int(match.group(1)) if match else None
