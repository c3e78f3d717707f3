"""How large the input chunks are and how many are in flight, from the byte error rate the link shows.

Input goes out go-back-N (docs/link.md): a chunk lost or damaged costs itself and every chunk sent behind
it. A long chunk carries more payload per frame's overhead but is more likely to meet a bad byte; a long
window keeps the line busy but loses more on each fault. FrameSizer estimates the link's byte error rate
from what the loads met (faults per byte of the chunks whose fate was seen, decaying so the estimate
follows a link that heals or worsens) and picks the chunk and window with the most payload per byte on
the wire under that rate:

    useful share = L/(L+o) · min(1, W(L+o) / (L+o+R)) · s / (s + (1-s)·W),   s = (1-p)^(L+o+a)

L payload bytes per chunk, o its framing, a the acknowledgement's bytes (a damaged answer costs a go-back
too), W chunks in flight, R the bytes the line carries in one round trip, p the byte error rate. On a clean
link (p = 0) it is the largest chunk and the widest window the device's buffers allow, as without it.
"""

import math
from dataclasses import dataclass

from harness.link.framing import OVERHEAD

CHUNK_FRAMING = OVERHEAD + 4  # a LOAD_INPUT frame's bytes beyond its payload (the offset field)
ANSWER_BYTES = OVERHEAD + 4  # a LOAD_INPUT answer: the bytes loaded so far
SMALLEST_CHUNK = 64
# The estimate halves its memory every so many bytes seen, so it follows a link that changes: chunks grow
# back step by step as a healed link stays clean. Once less than a twentieth of a fault is left in it the
# link counts as clean again (about 140 KB after a lone fault, five VWW inputs; about 350 KB after a long
# spell at 2e-3) and gets its largest frames back.
HALF_LIFE_BYTES = 32 * 1024
CLEAN_BELOW_FAULTS = 0.05
# A round trip that no measurement gives: a USB-serial adapter's 1 ms frames and the host's scheduling.
ASSUMED_ROUND_TRIP_SECONDS = 0.002


@dataclass(frozen=True)
class Sizing:
    chunk: int  # payload bytes per LOAD_INPUT frame (after the offset field)
    window: int  # chunks in flight


class FrameSizer:
    """The byte error rate the link has shown, and the sizing that carries most under it."""

    def __init__(self):
        self._faults = 0.0
        self._bytes = 0.0

    @property
    def byte_error_rate(self) -> float:
        return self._faults / self._bytes if self._faults >= CLEAN_BELOW_FAULTS else 0.0

    def delivered(self, nbytes: int) -> None:
        """A chunk and its answer, `nbytes` together, went through intact."""
        self._observe(nbytes, 0)

    def fault(self, nbytes: int) -> None:
        """A chunk or its answer (`nbytes` together) was lost or damaged: one go-back. The chunks sent
        behind it are thrown away untested, so they count for nothing."""
        self._observe(nbytes, 1)

    def _observe(self, nbytes: int, faults: int) -> None:
        decay = 0.5 ** (nbytes / HALF_LIFE_BYTES)
        self._faults = self._faults * decay + faults
        self._bytes = self._bytes * decay + nbytes

    def choose(self, largest: int, window_bytes: int, max_window: int, bytes_per_second: float) -> Sizing:
        """The chunk (at most `largest`) and window (at most `max_window` chunks, at most `window_bytes` in
        flight) with the largest useful share of the line at the estimated error rate."""
        p = min(self.byte_error_rate, 0.5)
        round_trip = bytes_per_second * ASSUMED_ROUND_TRIP_SECONDS
        best, best_share = None, -1.0
        for chunk in _candidate_chunks(largest):
            frame = chunk + CHUNK_FRAMING
            survives = (1 - p) ** (frame + ANSWER_BYTES)
            for window in range(1, max(1, min(max_window, window_bytes // frame)) + 1):
                busy = min(1.0, window * frame / (frame + round_trip))
                share = chunk / frame * busy * survives / (survives + (1 - survives) * window)
                if share >= best_share:  # a tie (a clean link) goes to the wider window
                    best, best_share = Sizing(chunk, window), share
        return best


def _candidate_chunks(largest: int) -> list[int]:
    """Powers of two and their halfway points from SMALLEST_CHUNK up, and `largest` itself."""
    sizes = {largest}
    for exponent in range(int(math.log2(SMALLEST_CHUNK)), int(math.log2(max(largest, 1))) + 1):
        for size in (2**exponent, 3 * 2 ** (exponent - 1)):
            if SMALLEST_CHUNK <= size < largest:
                sizes.add(size)
    return sorted(sizes)
