"""The smallest tensor arena at which the TFLM host interpreter loads and runs a model.

TFLM's host interpreter can crash the process on a too-small arena, and the total its recording
allocator prints can be below the smallest arena that works, so every probe runs in a forked child
(a crash is just a failed probe) and a binary search finds the boundary. Run as a subprocess:

    python -m harness.model.arena_probe MODEL.tflite   → prints the arena in bytes
"""

import os
import sys

import numpy as np

PRECISION = 0.005  # stop when the bracket is within 0.5 % of the answer
GRANULE = 16  # TFLM aligns allocations to 16 bytes


def _works(model_data: bytes, arena: int) -> bool:
    pid = os.fork()
    if pid == 0:  # child: any failure, including a crash, is a failed probe
        code = 1
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # TFLM's allocation errors are expected here
            from harness.model.tflm import make_interpreter

            interpreter = make_interpreter(model_data, arena)
            details = interpreter.get_input_details(0)
            interpreter.set_input(np.zeros(details["shape"], details["dtype"]), 0)
            interpreter.invoke()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def smallest_arena(model_data: bytes) -> int:
    from harness.model.tflm import arena_used_bytes, make_interpreter

    recorded = arena_used_bytes(make_interpreter(model_data, max(64 << 20, 10 * len(model_data)))) or 1 << 16
    low, high = recorded // 2, recorded
    while not _works(model_data, high):
        low, high = high, high * 2
    while _works(model_data, low) and low > GRANULE:
        low, high = low // 2, low
    while high - low > max(GRANULE, int(high * PRECISION)):
        middle = (low + high) // 2 // GRANULE * GRANULE
        if middle <= low:
            break
        if _works(model_data, middle):
            high = middle
        else:
            low = middle
    return high


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        print(smallest_arena(f.read()))
