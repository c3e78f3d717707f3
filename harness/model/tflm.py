"""The TFLM host interpreter from the tflite-micro package, and its arena figure."""

import os
import re
import sys
import tempfile

from tflite_micro.python.tflite_micro import runtime

_ARENA_TOTAL = re.compile(rb"Arena allocation total (\d+) bytes")


def make_interpreter(model_data: bytes, arena_bytes: int) -> runtime.Interpreter:
    return runtime.Interpreter.from_bytes(model_data, arena_size=arena_bytes)


def arena_used_bytes(interpreter: runtime.Interpreter) -> int | None:
    """What the recording allocator reports (a 64-bit host figure), read from its stderr dump."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            interpreter.print_allocations()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        match = _ARENA_TOTAL.search(capture.read())
    return int(match.group(1)) if match else None
