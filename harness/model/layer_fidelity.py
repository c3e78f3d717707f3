"""Float against int8, layer by layer: an int8 model and its float source run on the same inputs (LiteRT, every
tensor kept), each int8 operator output dequantized and compared with its float counterpart by cosine similarity
and relative L2 error ||q - f|| / ||f||, averaged over the samples.

How an int8 tensor finds its float counterpart (the converter names a tensor after the TensorFlow ops it fused,
the last op's name first, "model/activation/Relu;model/batch_normalization/FusedBatchNormV3;..."):
  1. "name": a float tensor of exactly the same name;
  2. "first name": else the one float tensor whose first ';'-separated name is the same (converters of other
     versions write the fused ops' other names differently, "ReadVariableOp" against "ReadVariableOp/resource");
  3. "model input" / "model output": else, when the tensor is the model's k-th input or output, or reaches it
     through QUANTIZE or DEQUANTIZE operators only (they carry one value from float to int8 or back), the float
     model's k-th input or output.
A counterpart must have the same shape. A tensor with none is listed as unmatched, never dropped."""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.errors import UserError
from harness.model.preserved_run import GraphTensor, PreservedGraph

WORST_LAYERS = 3  # the layers that add the most relative L2 error are marked
CARRIERS = ("QUANTIZE", "DEQUANTIZE")  # operators that carry one value across types


@dataclass
class LayerFidelity:
    """One operator output of the int8 model against its float counterpart; figures are means over the samples
    whose figures are defined (`samples`), None when there are none."""

    index: int  # the operator's index in the int8 model; -1 for the model's input
    operator: str
    tensor: str
    shape: tuple[int, ...]
    status: str  # a key of STATUS
    float_tensor: str | None = None
    matched_by: str | None = None
    cosine: float | None = None
    cosine_min: float | None = None
    relative_l2: float | None = None
    relative_l2_max: float | None = None
    added_l2: float | None = None  # relative L2 above the largest of the operator's inputs'
    samples: int = 0
    worst: bool = False


STATUS = {
    "compared": "compared",
    "unmatched": "no float tensor of this name or shape",
    "not comparable": "neither quantized nor float: shape arithmetic, an index or a count",
    "non-finite": "a tensor held NaN or infinity: damage, no figure given",
    "undefined": "the float tensor was all zeros on every sample",
}


@dataclass
class FidelityReport:
    layers: list[LayerFidelity]
    input: LayerFidelity
    samples: int
    not_compared: list[LayerFidelity] = field(default_factory=list)  # integer outputs: shapes, indices


def dequantize(values: np.ndarray, tensor: GraphTensor) -> np.ndarray:
    """Real values of a quantized tensor, per tensor or per channel along its quantized dimension."""
    if not tensor.quantized:
        return np.asarray(values, dtype=np.float64)
    shape = [1] * values.ndim
    if tensor.scales.size > 1:
        if values.shape[tensor.axis] != tensor.scales.size:
            raise ValueError(f"{tensor.name}: {tensor.scales.size} scales for {values.shape[tensor.axis]} channels")
        shape[tensor.axis] = tensor.scales.size
    scales = tensor.scales.reshape(shape)
    zero_points = tensor.zero_points.reshape(shape) if tensor.zero_points.size == tensor.scales.size else 0
    return (values.astype(np.float64) - zero_points) * scales


def similarity(quantized: np.ndarray, real: np.ndarray) -> tuple[float | None, float | None]:
    """(cosine, relative L2) of two real arrays; None where undefined (a zero vector). Non-finite input is
    refused with ValueError: it is damage, not a figure."""
    q = np.asarray(quantized, dtype=np.float64).ravel()
    f = np.asarray(real, dtype=np.float64).ravel()
    if not (np.isfinite(q).all() and np.isfinite(f).all()):
        raise ValueError("non-finite values")
    norm_q, norm_f = float(np.linalg.norm(q)), float(np.linalg.norm(f))
    relative = float(np.linalg.norm(q - f)) / norm_f if norm_f > 0 else None
    cosine = float(np.clip(np.dot(q, f) / (norm_q * norm_f), -1.0, 1.0)) if norm_q > 0 and norm_f > 0 else None
    if not all(np.isfinite(x) for x in (cosine, relative) if x is not None):
        raise ValueError("non-finite figures")
    return cosine, relative


def match_tensors(quantized: PreservedGraph, reference: PreservedGraph) -> dict[int, tuple[int, str]]:
    """int8 tensor index -> (float tensor index, the rule that matched it) for the model input and every
    operator output that has a counterpart (the rules: this module's docstring)."""
    candidates = [*reference.inputs, *(i for op in reference.operators for i in op.outputs)]
    by_name = {reference.tensors[i].name: i for i in candidates}
    by_first: dict[str, list[int]] = {}
    for index in candidates:
        by_first.setdefault(_first_name(reference.tensors[index].name), []).append(index)
    ends = _model_ends(quantized, reference)
    matches = {}
    for index in [*quantized.inputs, *(i for op in quantized.operators for i in op.outputs)]:
        tensor = quantized.tensors[index]
        firsts = by_first.get(_first_name(tensor.name), [])
        found = (
            (by_name.get(tensor.name), "name"),
            (firsts[0] if len(firsts) == 1 else None, "first name"),
            ends.get(index, (None, "")),
        )
        for candidate, rule in found:
            if candidate is not None and _size(reference.tensors[candidate]) == _size(tensor):
                matches[index] = (candidate, rule)
                break
    return matches


def _first_name(name: str) -> str:
    return name.split(";", 1)[0]


def _size(tensor: GraphTensor) -> tuple[int, ...]:
    return tuple(n for n in tensor.shape if n != 1)  # a batch or unit dimension more or less is the same values


def _model_ends(quantized: PreservedGraph, reference: PreservedGraph) -> dict[int, tuple[int, str]]:
    """The model's inputs and outputs, and the tensors joined to them through QUANTIZE/DEQUANTIZE operators,
    -> the float model's input or output of the same position."""
    joined: dict[int, set[int]] = {}
    for op in quantized.operators:
        if op.name in CARRIERS and len(op.inputs) == 1 and len(op.outputs) == 1:
            group = joined.get(op.inputs[0], {op.inputs[0]}) | joined.get(op.outputs[0], {op.outputs[0]})
            for member in group:
                joined[member] = group
    ends = {}
    for ours, theirs, rule in (
        (quantized.inputs, reference.inputs, "model input"),
        (quantized.outputs, reference.outputs, "model output"),
    ):
        for position, index in enumerate(ours[: len(theirs)]):
            for member in joined.get(index, {index}):
                ends.setdefault(member, (theirs[position], rule))
    return ends


def check_float(reference: PreservedGraph, what: str) -> None:
    quantized = [t for op in reference.operators for t in op.outputs if reference.tensors[t].quantized]
    if quantized or reference.tensors[reference.inputs[0]].dtype != np.float32:
        raise UserError(f"{what} is not a float model (its tensors are quantized); pass the float model")


def compare_layers(
    quantized_model: bytes, float_model: bytes, inputs: Sequence[tuple[np.ndarray, np.ndarray]], float_name: str
) -> FidelityReport:
    """Every operator output of the int8 model against the float model's, over `inputs`: pairs of (the float
    model's input, the int8 model's input) made from one sample."""
    quantized, reference = _loaded(quantized_model, "the int8 model"), _loaded(float_model, float_name)
    check_float(reference, float_name)
    for graph, which, name in ((quantized, 1, "the int8 model"), (reference, 0, float_name)):
        given = [pair[which] for pair in inputs[:1]]
        model_input = graph.tensors[graph.inputs[0]]
        if given and int(np.prod(model_input.shape)) != given[0].size:
            raise UserError(
                f"{name} takes an input of {list(model_input.shape)}, the card's preprocessing makes "
                f"{list(given[0].shape)}; pass the model that belongs to the card"
            )
    matches = match_tensors(quantized, reference)
    figures: dict[int, list] = {index: [] for index in matches}
    damaged: set[int] = set()
    for float_input, int8_input in inputs:
        ours, theirs = quantized.run(int8_input), reference.run(float_input)
        for index, (counterpart, _) in matches.items():
            try:
                real = dequantize(ours[index], quantized.tensors[index])
                figures[index].append(similarity(real, theirs[counterpart].reshape(real.shape)))
            except ValueError:
                damaged.add(index)
    rows = {}
    for op in quantized.operators:
        for index in op.outputs:
            rows[index] = _row(op.index, op.name, quantized, reference, index, matches, figures, damaged)
    model_input = quantized.inputs[0]
    entry = _row(-1, "INPUT", quantized, reference, model_input, matches, figures, damaged)
    rows.setdefault(model_input, entry)
    every = [rows[i] for op in quantized.operators for i in op.outputs]
    layers = [row for row in every if row.status != "not comparable"]
    _add_growth(quantized, rows, layers)
    skipped = [row for row in every if row.status == "not comparable"]
    return FidelityReport(layers, entry, len(inputs), skipped)


def _loaded(model: bytes, what: str) -> PreservedGraph:
    try:
        return PreservedGraph(model)
    except (ValueError, RuntimeError) as exc:  # LiteRT's refusal of a file that is not a model it can run
        detail = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{what} cannot be run by LiteRT ({detail}); pass a valid .tflite model") from exc


def _row(position, operator, quantized, reference, index, matches, figures, damaged) -> LayerFidelity:
    tensor = quantized.tensors[index]
    row = LayerFidelity(position, operator, tensor.name, tensor.shape, "compared")
    if not (tensor.quantized or np.issubdtype(tensor.dtype, np.floating)):
        row.status = "not comparable"
        return row
    if index not in matches:
        row.status = "unmatched"
        return row
    counterpart, row.matched_by = matches[index]
    row.float_tensor = reference.tensors[counterpart].name
    if index in damaged:
        row.status = "non-finite"
        return row
    cosines = [c for c, _ in figures[index] if c is not None]
    errors = [e for _, e in figures[index] if e is not None]
    if not errors:
        row.status = "undefined"
        return row
    row.samples = len(errors)
    row.relative_l2, row.relative_l2_max = float(np.mean(errors)), float(np.max(errors))
    if cosines:
        row.cosine, row.cosine_min = float(np.mean(cosines)), float(np.min(cosines))
    return row


def _add_growth(quantized: PreservedGraph, rows: dict[int, LayerFidelity], layers: list[LayerFidelity]) -> None:
    """Each compared layer's relative L2 above its inputs' largest, and the WORST_LAYERS largest marked."""
    producers = {i: op for op in quantized.operators for i in op.outputs}
    for index, row in rows.items():
        if row.relative_l2 is None or index not in producers:
            continue
        before = [rows[i].relative_l2 for i in producers[index].inputs if i in rows and rows[i] is not row]
        known = [value for value in before if value is not None]
        row.added_l2 = row.relative_l2 - max(known) if known else row.relative_l2
    grown = sorted((r for r in layers if r.added_l2 is not None and r.added_l2 > 0), key=lambda r: -r.added_l2)
    for row in grown[:WORST_LAYERS]:
        row.worst = True
