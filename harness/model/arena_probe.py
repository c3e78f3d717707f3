"""The smallest tensor arena at which the TFLM host interpreter loads and runs a model.

TFLM's host interpreter can crash the process on a too-small arena, and the total its recording
allocator prints can be below the smallest arena that works, so every probe runs in a forked child
(a crash is just a failed probe) and a binary search finds the boundary. Run as a subprocess:

    python -m harness.model.arena_probe MODEL.tflite   → prints the arena in bytes

The search stops at a ceiling (64 MiB, or ten times the model's size when that is more: far above
any microcontroller's RAM). A model that does not run at the ceiling runs at no size; the probe then
exits with NO_ARENA and prints the ceiling.
"""

import os
import sys

import numpy as np

PRECISION = 0.005  # stop when the bracket is within 0.5 % of the answer
GRANULE = 16  # TFLM aligns allocations to 16 bytes
NO_ARENA = 3  # exit status: no arena up to the ceiling runs the model


class NoArena(Exception):
    def __init__(self, ceiling: int):
        super().__init__(f"no arena up to {ceiling} bytes runs this model")
        self.ceiling = ceiling


def ceiling(model_data: bytes) -> int:
    return max(64 << 20, 10 * len(model_data))


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

    top = ceiling(model_data)
    if not _works(model_data, top):
        raise NoArena(top)
    recorded = min(arena_used_bytes(make_interpreter(model_data, top)) or 1 << 16, top)
    low, high = recorded // 2, recorded
    while not _works(model_data, high):
        low, high = high, min(high * 2, top)
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
        data = f.read()
    try:
        print(smallest_arena(data))
    except NoArena as exc:
        print(exc.ceiling)
        sys.exit(NO_ARENA)
