"""What a device computes from what it is sent: the model's own tensors, or what an MLPerf Tiny reference
DUT makes of them (a model card's [eembc] input and [output] kind).

A run sends the computation's `input`, records its `output` (from the device, and from each host
reference through `result`), and the EEMBC client reads m-results into that output (`from_printed`).

- ModelOutputs: the model's input tensor in, its output tensor out (vww01, kws01, ic01, harness firmware).
- ReconstructionError: ad01's reference submission (anomaly_detection/submitter_implemented.cpp): float32
  features in; th_load_tensor quantizes each as util/quantization_helpers.h's QuantizeFloatToInt8
  (float32 `round(v / scale) + zero_point`, halves away from zero, clamped to int8); th_results prints
  `m-results-[%0.3f]` of the mean over the features of (DequantizeInt8ToFloat(out) - v)^2, summed in
  float32 in feature order. The result is that printed score, as a float32.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.tensors import DTYPE_CODES, TensorSpec, affine_quantize

RunModel = Callable[[np.ndarray], bytes]  # the model's input tensor -> its output tensor's bytes
SCORE_FORMAT = "{:0.3f}"  # th_results' %0.3f
FLOAT32 = DTYPE_CODES[np.dtype(np.float32)]


@dataclass(frozen=True)
class ModelOutputs:
    """The model's tensors as they are: the device is sent the input tensor and answers the output tensor."""

    input: TensorSpec
    output: TensorSpec
    step: float | None = None  # a float output's int8 step, where the model has one (TfliteModel.output_step)
    kind = "model"

    def result(self, run_model: RunModel, tensor: np.ndarray) -> bytes:
        return run_model(tensor)

    def from_printed(self, values: list[float]) -> bytes:
        """Printed (dequantized) values back to the output tensor's bytes: exact for 8-bit outputs."""
        spec = self.output
        if not spec.is_quantized:
            return np.asarray(values, dtype=spec.numpy_dtype).tobytes()
        info = np.iinfo(spec.numpy_dtype)
        q = np.rint(np.asarray(values) / spec.scale + spec.zero_point)
        return np.clip(q, info.min, info.max).astype(spec.numpy_dtype).tobytes()

    @property
    def values(self) -> int:
        return self.output.bytes // self.output.numpy_dtype.itemsize


@dataclass(frozen=True)
class ReconstructionError:
    """ad01: float32 features in, quantized to the int8 model's input; out, the printed mean squared error
    between the dequantized reconstruction and the features."""

    model_input: TensorSpec
    model_output: TensorSpec
    kind = "reconstruction_mse"
    values = 1
    step = None  # the score is compared in float32 units

    @property
    def input(self) -> TensorSpec:
        shape = self.model_input.shape
        return TensorSpec(FLOAT32, shape, 0.0, 0, 4 * int(np.prod(shape)))

    @property
    def output(self) -> TensorSpec:
        return TensorSpec(FLOAT32, (1,), 0.0, 0, 4)

    def quantize(self, features: np.ndarray) -> np.ndarray:
        """QuantizeFloatToInt8: float32 division, C's round (halves away from zero), clamped; NaN as 0."""
        return affine_quantize(features, self.model_input)

    def score(self, features: np.ndarray, output: bytes) -> np.float32:
        """calculate_result: float32 throughout, summed in feature order."""
        spec = self.model_output
        q = np.frombuffer(output, np.int8).astype(np.int32)
        restored = (q - spec.zero_point).astype(np.float32) * np.float32(spec.scale)
        diff = restored - features.astype(np.float32).reshape(-1)
        total = np.cumsum(diff * diff, dtype=np.float32)[-1]  # one float32 addition after another
        return total / np.float32(diff.size)

    def result(self, run_model: RunModel, tensor: np.ndarray) -> bytes:
        score = self.score(tensor, run_model(self.quantize(tensor)))
        return self.from_printed([float(SCORE_FORMAT.format(float(score)))])

    def from_printed(self, values: list[float]) -> bytes:
        return np.asarray(values, dtype=np.float32).tobytes()


DutComputation = ModelOutputs | ReconstructionError


def dut_computation(card, model) -> DutComputation:
    """The computation a run's device does with `model`, as the card says (card None: the model's own)."""
    if card is not None and card.output.kind == ReconstructionError.kind:
        return ReconstructionError(model.input, model.output)
    return ModelOutputs(model.input, model.output, model.output_step)


def as_computation(tensors) -> DutComputation:
    """A computation as it is; a model (or anything with input and output specs) as its own tensors."""
    if isinstance(tensors, ModelOutputs | ReconstructionError):
        return tensors
    return ModelOutputs(tensors.input, tensors.output, getattr(tensors, "output_step", None))
