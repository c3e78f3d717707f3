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
