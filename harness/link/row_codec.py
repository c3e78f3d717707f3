"""The row codec's encoder (docs/link.md, "Compressed inputs"): the device decodes it in
firmware/core/hp_row_codec.c, the only decoder there is.

An input's element bytes (one byte an element: a uint8/int8 tensor, or a float32 tensor of whole numbers
that the device widens) are laid out as rows of `row` bytes, `step` bytes an element position (the channels
of an image row, interleaved). Each row is predicted from the row above and the bytes to its left by one of
PNG's filters or LOCO-I's median predictor, whichever codes it in the fewest bits, and the residuals
(zigzagged) are Rice-coded with the row's own parameter k. The stream:

    header  u16 row, u8 step, u8 mode (bits 0-1: OUT_*, bit 2: bytes are int8, predicted as value + 128,
            bit 3: pixels of three channels (R, G, B) go as G, R - G, B - G, modulo 256: the subtract-green
            transform, which leaves nothing to code in the colour channels of a grey pixel)
    per row 3 bits filter, 3 bits k, then each residual z: q = z >> k ones, a zero, z's low k bits;
            q >= ESCAPE: ESCAPE ones and z's 8 bits
    the bits most significant first, the last byte padded with zeros
"""

import numpy as np

OUT_BYTES, OUT_WIDEN_U8, OUT_WIDEN_I8 = 0, 1, 2
MODE_SIGNED = 4
MODE_GREEN = 8
ESCAPE = 12
HEADER_BYTES = 4
ROW_HEAD_BITS = 6
FILTERS = ("none", "sub", "up", "average", "paeth", "median")
K_MAX = 7
# The filters the encoder picks from by default: Paeth's rows save 0.3 % of the demo images' wire bytes and cost
# 67 instructions an element on qemu_m4 against the others' 42-58 (benchmarks/codec_instructions.py --filters),
# so it is left out; the device still decodes it.
DEFAULT_FILTERS = (0, 1, 2, 3, 5)


def predictions(grid: np.ndarray, step: int) -> np.ndarray:
    """Each filter's prediction of every byte of `grid` (rows x row bytes, int32): filters x rows x bytes."""
    a, b, c = np.zeros_like(grid), np.zeros_like(grid), np.zeros_like(grid)
    a[:, step:] = grid[:, :-step]
    b[1:] = grid[:-1]
    c[1:, step:] = grid[:-1, :-step]
    pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
    paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    low, high = np.minimum(a, b), np.maximum(a, b)
    median = np.where(c >= high, low, np.where(c <= low, high, a + b - c))
    return np.stack([np.zeros_like(grid), a, b, (a + b) >> 1, paeth, median])


def _symbol_bits(z: np.ndarray, k: int) -> np.ndarray:
    q = z >> k
    return np.where(q < ESCAPE, q + 1 + k, ESCAPE + 8)


def _codes(z: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each residual's code word and its length in bits, for per-residual k."""
    q = z >> k
    plain = q < ESCAPE
    ones = (1 << np.minimum(q, ESCAPE)) - 1
    code = np.where(plain, (ones << (1 + k)) | (z & ((1 << k) - 1)), (((1 << ESCAPE) - 1) << 8) | z)
    return code, np.where(plain, q + 1 + k, ESCAPE + 8)


def _pack(codes: np.ndarray, lengths: np.ndarray) -> bytes:
    """Code words, most significant bit first, into bytes (the last padded with zeros)."""
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    starts = np.repeat(ends - lengths, lengths)
    shift = np.repeat(lengths, lengths) - 1 - (np.arange(total) - starts)
    bits = (np.repeat(codes, lengths) >> shift) & 1
    return np.packbits(bits.astype(np.uint8)).tobytes()


def encode(
    elements: np.ndarray,
    row: int,
    step: int,
    out: int,
    filters: tuple[int, ...] = DEFAULT_FILTERS,
    green: bool | None = None,
) -> bytes:
    """`elements` (uint8 or int8, flat) as the row codec's stream, rows of `row` bytes, each row under the
    filter (of `filters`, default DEFAULT_FILTERS) and k that code it in the fewest bits; `green`: the subtract-green
    transform (default: for three channels)."""
    signed = elements.dtype == np.int8
    flat = elements.view(np.uint8).astype(np.int32) ^ (0x80 if signed else 0)
    green = step == 3 and len(flat) % 3 == 0 and row % 3 == 0 if green is None else green
    if green:
        rgb = flat.reshape(-1, 3)
        flat = np.stack([rgb[:, 1], (rgb[:, 0] - rgb[:, 1]) & 0xFF, (rgb[:, 2] - rgb[:, 1]) & 0xFF], axis=1).ravel()
    rows = -(-len(flat) // row)
    grid = np.zeros(rows * row, np.int32)
    grid[: len(flat)] = flat
    grid = grid.reshape(rows, row)
    residual = (grid[None] - predictions(grid, step)) & 0xFF
    z = np.where(residual >= 128, ((256 - residual) << 1) - 1, residual << 1)  # the int8 residual zigzagged
    valid = (np.arange(rows * row) < len(flat)).reshape(rows, row)
    cost = np.stack([(_symbol_bits(z, k) * valid).sum(axis=2) for k in range(K_MAX + 1)])  # k x filter x row
    cost[:, [f for f in range(len(FILTERS)) if f not in filters]] = np.iinfo(cost.dtype).max
    best = cost.reshape(-1, rows).argmin(axis=0)
    k, chosen = best // len(FILTERS), best % len(FILTERS)
    z_rows = z[chosen, np.arange(rows)]
    sym_codes, sym_lengths = _codes(z_rows, np.repeat(k, row).reshape(rows, row))
    heads = (chosen << 3) | k
    codes = np.concatenate([heads[:, None], sym_codes], axis=1)[np.c_[np.ones((rows, 1), bool), valid]]
    lengths = np.concatenate([np.full((rows, 1), ROW_HEAD_BITS), sym_lengths], axis=1)[
        np.c_[np.ones((rows, 1), bool), valid]
    ]
    mode = out | (MODE_SIGNED if signed else 0) | (MODE_GREEN if green else 0)
    header = row.to_bytes(2, "little") + bytes([step, mode])
    return header + _pack(codes.astype(np.int64), lengths.astype(np.int64))


def layouts(shape: tuple[int, ...], elements: int, longest: int) -> list[tuple[int, int]]:
    """The (row bytes, step) layouts worth trying for a tensor of `shape`, rows of at most `longest` bytes: an
    image's rows with their channels interleaved (N)HWC, a feature map's rows of its last axis, and the elements
    in rows as long as the device takes."""
    dims = [d for d in shape if d > 1]
    found = []
    if len(dims) >= 3:
        found.append((dims[-2] * dims[-1], dims[-1]))
    if len(dims) >= 2:
        found.append((dims[-1], 1))
    found.append((min(elements, longest), 1))
    return [(row, step) for row, step in dict.fromkeys(found) if 0 < step <= min(row, 8) and row <= longest]
