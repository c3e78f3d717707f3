"""What a device computes from what it is sent: the model's own tensors, or what an MLPerf Tiny reference
DUT makes of them (a model card's [eembc] input and [output] kind).

A run sends the computation's `input`, records its `output` (from the device, and from each host
reference through `result`), and the EEMBC client reads m-results into that output (`from_printed`).
Each computation is the model's tensors with a step before (`to_model`) and after (`finish`): a device
whose protocol computes the whole (an MLPerf Tiny DUT) is sent the input and answers the output; any other
(harness firmware) runs the model only, the host doing both steps around it (DeviceShare), so both protocols
give the same result for every sample.

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


class _AroundTheModel:
    """A computation as the model between two steps of the host's: `to_model` before, `finish` after."""

    def result(self, run_model: RunModel, tensor: np.ndarray) -> bytes:
        """The computation done on the host, the model run by `run_model` (a host reference)."""
        return self.finish(tensor, run_model(self.to_model(tensor)))


@dataclass(frozen=True)
class ModelOutputs(_AroundTheModel):
    """The model's tensors as they are: the device is sent the input tensor and answers the output tensor."""

    input: TensorSpec
    output: TensorSpec
    step: float | None = None  # a float output's int8 step, where the model has one (TfliteModel.output_step)
    kind = "model"

    @property
    def on_model(self) -> "ModelOutputs":
        return self

    def to_model(self, tensor: np.ndarray) -> np.ndarray:
        return tensor

    def finish(self, tensor: np.ndarray, model_output: bytes) -> bytes:
        return model_output

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
class ReconstructionError(_AroundTheModel):
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

    @property
    def on_model(self) -> ModelOutputs:
        """The model's own tensors, which the DUT runs between quantizing and scoring."""
        return ModelOutputs(self.model_input, self.model_output)

    def to_model(self, features: np.ndarray) -> np.ndarray:
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

    def finish(self, features: np.ndarray, model_output: bytes) -> bytes:
        """The score as th_results prints it, from the model's output tensor."""
        return self.from_printed([float(SCORE_FORMAT.format(float(self.score(features, model_output))))])

    def from_printed(self, values: list[float]) -> bytes:
        return np.asarray(values, dtype=np.float32).tobytes()


DutComputation = ModelOutputs | ReconstructionError


@dataclass(frozen=True)
class DeviceShare:
    """What a device does of a run's computation: the whole of it where its protocol computes that kind (an
    MLPerf Tiny DUT printing ad01's score), else the model only, the host making the model's input from the
    sample's tensor before (`sent`) and the result from the model's output after (`result`)."""

    computation: DutComputation
    whole: bool

    @classmethod
    def of(cls, computation: DutComputation, computes: tuple[str, ...]) -> "DeviceShare":
        """The share of a device whose protocol computes the kinds in `computes` (DeviceSession.COMPUTES)."""
        return cls(computation, computation.kind in computes)

    @property
    def tensors(self) -> DutComputation:
        """What the device is sent and answers."""
        return self.computation if self.whole else self.computation.on_model

    def sent(self, tensor: np.ndarray) -> bytes:
        """The bytes the device is sent for a sample's tensor (the run's input)."""
        return (tensor if self.whole else self.computation.to_model(tensor)).tobytes()

    def result(self, tensor: np.ndarray, answered: bytes) -> bytes:
        """The sample's result (the run's output) from what the device answered."""
        return answered if self.whole else self.computation.finish(tensor, answered)


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


def device_bytes(share: DeviceShare | None, tensor: np.ndarray) -> bytes:
    """What a device is sent for a sample's tensor (share None: the tensor as it is)."""
    return share.sent(tensor) if share else tensor.tobytes()
