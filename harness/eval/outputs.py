"""Read a model's raw output bytes as a prediction, a score, and a distance in quantization steps."""

import numpy as np

from harness.model.card import OutputMeaning
from harness.tensors import TensorSpec


def dequantize(raw: bytes, spec: TensorSpec) -> np.ndarray:
    values = np.frombuffer(raw, spec.numpy_dtype).astype(np.float64)
    return (values - spec.zero_point) * spec.scale if spec.is_quantized else values


def class_scores(raw: bytes, spec: TensorSpec, meaning: OutputMeaning) -> np.ndarray:
    """One probability-like score per class (softmax applied to logits)."""
    values = dequantize(raw, spec)
    if meaning.kind == "logits":
        exp = np.exp(values - values.max())
        values = exp / exp.sum()
    return values


NO_DECISION = -1  # the prediction of a task that gives scores, not classes (anomaly detection's windows)


def score_of(raw: bytes, spec: TensorSpec) -> float:
    """A single-value output (a sigmoid, an anomaly score) as a number."""
    return float(dequantize(raw, spec)[0])


def predict(raw: bytes, spec: TensorSpec, meaning: OutputMeaning) -> tuple[int, float]:
    """(1 if the positive class was predicted else 0, the positive class's score). A sigmoid predicts
    positive above the card's threshold."""
    if meaning.kind == "sigmoid":
        score = score_of(raw, spec)
        return int(score > meaning.threshold), score
    values = class_scores(raw, spec, meaning)
    return int(int(np.argmax(values)) == meaning.positive_index), float(values[meaning.positive_index])


def predict_class(raw: bytes, spec: TensorSpec, meaning: OutputMeaning) -> tuple[int, float]:
    """(the top class's index, its score): multi-class tasks such as keyword spotting."""
    values = class_scores(raw, spec, meaning)
    top = int(np.argmax(values))
    return top, float(values[top])


def diff_steps(a: bytes, b: bytes, spec: TensorSpec, step: float | None) -> float:
    """Largest element-wise difference, in quantization steps where the output has them."""
    x = np.frombuffer(a, spec.numpy_dtype).astype(np.float64)
    y = np.frombuffer(b, spec.numpy_dtype).astype(np.float64)
    largest = float(np.max(np.abs(x - y))) if x.size else 0.0
    if np.issubdtype(spec.numpy_dtype, np.floating) and step:
        return largest / step
    return largest


def diff_unit(spec: TensorSpec, step: float | None) -> str:
    if np.issubdtype(spec.numpy_dtype, np.integer):
        return f"{spec.dtype_name} steps"
    return "quantization steps of the int8 output" if step else f"{spec.dtype_name} units"
