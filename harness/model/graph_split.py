"""A model cut after operator N: its later operators alone, reading what the earlier ones wrote as inputs.

The TFLM host interpreter cannot stop between operators, so a value changed after operator N (the planted
fault of a layer trace) reaches the later operators through this second model. The tensor table is kept
whole, so a tensor's index in the cut model is its index in the original.
"""

from dataclasses import dataclass

from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import UserError

# Metadata that fixes arena offsets per tensor (TFLM's offline planner); it describes the whole graph, not the cut.
_OFFLINE_PLAN = b"OFFLINE_MEMORY_ALLOCATION"


@dataclass(frozen=True)
class SplitModel:
    data: bytes  # the cut model's flatbuffer
    first_operator: int  # the original index of its first operator (N + 1)
    inputs: tuple[int, ...]  # tensor indices it reads from outside, in its input order (original indices)
    writes: tuple[int, ...]  # the tensors its operators write, in order


def split_after(model_data: bytes, operator: int) -> SplitModel:
    """Subgraph 0's operators after `operator`; every tensor they read that none of them writes and that holds
    no constant data (an earlier operator's output, a model input) becomes an input of the cut model."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(model_data), 0)
    graph = model.subgraphs[0]
    operators = list(graph.operators or ())
    if len(model.subgraphs) > 1 or any(t.isVariable for t in graph.tensors or ()):
        # Another subgraph (CALL_ONCE, WHILE) or a variable holds state the earlier operators may have changed,
        # which the cut model would start over from.
        raise UserError("a fault cannot be planted in a model with state (variables or more than one subgraph)")
    if not 0 <= operator < len(operators) - 1:
        raise ValueError(f"a cut after operator {operator} leaves no operator of {len(operators)} to run")
    kept = operators[operator + 1 :]
    writes = tuple(index for op in kept for index in _indices(op.outputs))
    written = set(writes)
    read = [int(index) for op in kept for index in _indices(op.inputs) if index >= 0]
    inputs = tuple(dict.fromkeys(i for i in read if i not in written and not _fixed(model, graph.tensors[i])))
    outputs = [int(i) for i in _indices(graph.outputs) if int(i) in written]
    graph.operators = kept
    graph.inputs = list(inputs)
    graph.outputs = outputs or [int(i) for i in _indices(kept[-1].outputs)]
    model.signatureDefs = None  # signatures name the original inputs and outputs
    model.metadata = [m for m in model.metadata or () if _name(m.name) != _OFFLINE_PLAN] or None
    return SplitModel(_pack(model), operator + 1, inputs, writes)


def _indices(values) -> list[int]:
    return [] if values is None else [int(v) for v in values]


def _fixed(model, tensor) -> bool:
    """A constant (its buffer holds data) or a variable (its operators keep it): not an input of the cut."""
    buffer = model.buffers[tensor.buffer]
    has_data = buffer.data is not None and len(buffer.data) > 0
    return has_data or bool(buffer.size) or bool(tensor.isVariable)


def _name(raw) -> bytes:
    return raw if isinstance(raw, bytes) else (raw or "").encode()


def _pack(model) -> bytes:
    import flatbuffers

    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
