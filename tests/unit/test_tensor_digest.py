"""tensor_digest (harness/tensor_digest.py) against the definition computed another way: each element packed
with struct, zlib's CRC-32 of those bytes, and min, max and sum in Python, element by element in order, as the
device's C loop does (firmware/core/hp_trace.c: the first of equal elements stays the minimum, so the sign of a
zero minimum is the first zero's; the sum starts at +0.0; a NaN makes the minimum and maximum NaN)."""

import math
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.tensor_digest import TensorDigest, tensor_digest

# numpy type -> (TfLiteType code, struct format): the codes as TFLM's TfLiteType numbers them.
LAYOUTS = {
    np.int8: (9, "b"),
    np.uint8: (3, "B"),
    np.int16: (7, "h"),
    np.int32: (2, "i"),
    np.int64: (4, "q"),  # wide enough that its sum wraps
    np.bool_: (6, "?"),
    np.float32: (1, "f"),
    np.float16: (10, "e"),
}
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6)


@st.composite
def tensors(draw) -> np.ndarray:
    dtype = draw(st.sampled_from(list(LAYOUTS)))
    if np.issubdtype(dtype, np.floating):
        # A few values repeat, zeros of both signs and the infinities among them, so that ties, -0.0 and inf - inf
        # (a NaN) turn up often.
        special = st.sampled_from([0.0, -0.0, math.inf, -math.inf, 1.0, -1.0])
        elements = st.one_of(special, st.floats(width=8 * np.dtype(dtype).itemsize, allow_nan=True))
        return draw(hnp.arrays(dtype, SHAPES, elements=elements))
    return draw(hnp.arrays(dtype, SHAPES))


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def expected_digest(array: np.ndarray) -> TensorDigest:
    code, fmt = LAYOUTS[array.dtype.type]
    values = array.reshape(-1).tolist()  # Python ints, bools and floats, in C order
    raw = b"".join(struct.pack("<" + fmt, v) for v in values)
    if not values:
        return TensorDigest(code, len(raw), zlib.crc32(raw), 0, 0, 0)
    if array.dtype.kind == "f":
        lowest = highest = values[0]
        total = 0.0
        for v in values:
            lowest = v if v < lowest else lowest
            highest = v if v > highest else highest
            total += v
        if any(math.isnan(v) for v in values):
            lowest = highest = math.nan
        return TensorDigest(code, len(raw), zlib.crc32(raw), lowest, highest, total)
    numbers = [int(v) for v in values]
    wrapped = sum(numbers) % 2**64
    total = wrapped - 2**64 if wrapped >= 2**63 else wrapped
    return TensorDigest(code, len(raw), zlib.crc32(raw), min(numbers), max(numbers), total)


def _assert_same(got: TensorDigest, want: TensorDigest) -> None:
    assert (got.dtype, got.bytes, got.crc32) == (want.dtype, want.bytes, want.crc32)
    for part in ("minimum", "maximum", "total"):
        mine, theirs = getattr(got, part), getattr(want, part)
        assert type(mine) is type(theirs), part
        if isinstance(theirs, float):
            assert _bits(mine) == _bits(theirs), (part, mine, theirs)
        else:
            assert mine == theirs, part
    assert got.matches(want)


@settings(max_examples=400, deadline=None)
@given(tensors())
def test_the_digest_is_the_definition(array):
    _assert_same(tensor_digest(array), expected_digest(array))


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([-0.0], np.float32),  # the sum starts at +0.0, as C's does
        ([0.0, -0.0], np.float32),  # the first of two equal zeros stays the minimum and the maximum
        ([-0.0, 0.0], np.float32),
        ([1.0, math.nan, -1.0], np.float32),
        ([math.inf, -math.inf], np.float32),
        ([2**62, 2**62, 2**62], np.int64),  # wraps to negative
        ([], np.int8),
        ([True, True, False], np.bool_),
    ],
)
def test_the_corners_of_the_definition(values, dtype):
    array = np.array(values, dtype=dtype)
    _assert_same(tensor_digest(array), expected_digest(array))


def test_a_tensor_in_another_layout_digests_as_its_c_order_little_endian_bytes():
    array = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    swapped = np.asfortranarray(array).astype(">i2")
    assert tensor_digest(swapped) == tensor_digest(array) == expected_digest(array)


def test_one_changed_element_changes_the_digest():
    array = np.zeros((4, 4), np.int8)
    changed = array.copy()
    changed[3, 3] = 1
    assert not tensor_digest(changed).matches(tensor_digest(array))
