"""One tensor summarised in 33 bytes: what a layer trace compares, on the host and on the device.

The definition (firmware/core/hp_trace.c computes the same on a board):
- ``crc32``: CRC-32 (zlib's) of the tensor's bytes as they lie in memory, C order, little-endian.
- ``minimum``, ``maximum``, ``total``: over the elements; int64 for integer and bool tensors (the sum wraps
  modulo 2**64 as C's does), float64 for float tensors (elements widened to double and summed in order from
  +0.0; of equal elements, 0.0 and -0.0, the first is the minimum or maximum; any NaN makes both NaN).
An empty tensor has minimum = maximum = total = 0.
"""

import math
import zlib
from dataclasses import dataclass

import numpy as np

from harness.tensors import DTYPE_CODES


@dataclass(frozen=True)
class TensorDigest:
    dtype: int
    bytes: int
    crc32: int
    minimum: int | float
    maximum: int | float
    total: int | float

    def matches(self, other: "TensorDigest") -> bool:
        """Equal bytes, by every part of the digest (the sums of floats compare bit for bit)."""
        return self == other or (
            self.dtype == other.dtype
            and self.bytes == other.bytes
            and self.crc32 == other.crc32
            and _same_bits(self.minimum, other.minimum)
            and _same_bits(self.maximum, other.maximum)
            and _same_bits(self.total, other.total)
        )


def _same_bits(left: float, right: float) -> bool:
    return np.float64(left).tobytes() == np.float64(right).tobytes()


def tensor_digest(array: np.ndarray) -> TensorDigest:
    data = np.ascontiguousarray(array)
    raw = data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes()
    dtype = DTYPE_CODES[data.dtype.newbyteorder("=")]
    flat = data.reshape(-1)
    if flat.size == 0:
        return TensorDigest(dtype, len(raw), zlib.crc32(raw), 0, 0, 0)
    if np.issubdtype(flat.dtype, np.floating):
        wide = flat.astype(np.float64)
        # In order from +0.0, as the device's loop sums (np.sum pairs; an all -0.0 cumsum ends at -0.0).
        with np.errstate(invalid="ignore"):  # inf + -inf is NaN, on the device too
            total = float(np.cumsum(wide)[-1]) + 0.0
        if np.isnan(wide).any():
            return TensorDigest(dtype, len(raw), zlib.crc32(raw), math.nan, math.nan, total)
        # The first of equal elements, as the device keeps it: 0.0 and -0.0 are equal, and min() picks either.
        lowest, highest = float(wide[np.argmin(wide)]), float(wide[np.argmax(wide)])
        return TensorDigest(dtype, len(raw), zlib.crc32(raw), lowest, highest, total)
    wide = flat.astype(np.int64)
    total = int(np.sum(wide, dtype=np.int64))
    return TensorDigest(dtype, len(raw), zlib.crc32(raw), int(wide.min()), int(wide.max()), total)
