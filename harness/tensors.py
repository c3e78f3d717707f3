"""Tensor descriptions shared by model files, references and the device link."""

from dataclasses import dataclass

import numpy as np

# TfLiteType codes (what the device reports) and their numpy types.
DTYPES = {
    1: ("float32", np.float32),
    2: ("int32", np.int32),
    3: ("uint8", np.uint8),
    4: ("int64", np.int64),
    6: ("bool", np.bool_),
    7: ("int16", np.int16),
    9: ("int8", np.int8),
    10: ("float16", np.float16),
}
DTYPE_CODES = {np.dtype(np_type): code for code, (_, np_type) in DTYPES.items()}


@dataclass(frozen=True)
class TensorSpec:
    dtype: int
    shape: tuple[int, ...]
    scale: float
    zero_point: int
    bytes: int

    @property
    def dtype_name(self) -> str:
        return DTYPES.get(self.dtype, (f"type{self.dtype}", None))[0]

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(DTYPES[self.dtype][1])

    @property
    def is_quantized(self) -> bool:
        return self.scale != 0.0 and np.issubdtype(self.numpy_dtype, np.integer)

    def describe(self) -> str:
        quant = f" q(scale={self.scale:g}, zp={self.zero_point})" if self.scale else ""
        return f"{self.dtype_name}{list(self.shape)}{quant}"

    def same_layout(self, other: "TensorSpec") -> bool:
        return (self.dtype, self.shape, self.bytes) == (other.dtype, other.shape, other.bytes)


def affine_quantize(values: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """TFLM's AffineQuantize (kernels/internal/reference/quantize.h): float32 division by the scale,
    rounded halves away from zero (TfLiteRound), plus the zero point, clamped to the integer type; NaN as 0."""
    ratio = (values.astype(np.float32) / np.float32(spec.scale)).astype(np.float64)  # exact widening
    rounded = np.sign(ratio) * np.floor(np.abs(ratio) + 0.5)  # exact in float64 for a float32 ratio
    q = np.nan_to_num(rounded, nan=0.0) + spec.zero_point
    info = np.iinfo(spec.numpy_dtype)
    return np.clip(q, info.min, info.max).astype(spec.numpy_dtype).reshape(spec.shape)
