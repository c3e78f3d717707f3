"""Per-operator host references (harness/model/layer_refs.py) and the planted fault's split model."""

import flatbuffers
import numpy as np
import pytest
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import UserError
from harness.model.graph_split import split_after
from harness.model.layer_refs import operator_digests, operator_outputs, perturbed, run_after
from harness.model.layer_runtimes import TflmTensors
from harness.model.references import HOST_ARENA_BYTES
from harness.model.tflm import make_interpreter
from harness.tensor_digest import tensor_digest
from tests.conftest import fixture_model

SMALL = "wake_vision_zoo/wv_quality_k_2_c_3.tflite"
RESIDUAL = "wake_vision_zoo/wv_quality_mobilenetv2.tflite"  # ADDs read a tensor written several operators earlier


def _model_and_input(relative: str, seed: int = 1) -> tuple[bytes, bytes]:
    data = fixture_model(relative).read_bytes()
    dtype, shape = TflmTensors(data).input_layouts()[0]
    return data, np.random.default_rng(seed).integers(0, 256, shape).astype(dtype).tobytes()


def _differing(left, right) -> list[int]:
    return [
        a.index
        for a, b in zip(left, right, strict=True)
        if any(not np.array_equal(x.array, y.array) for x, y in zip(a.outputs, b.outputs, strict=True))
    ]


def _steps(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())


def test_every_operator_in_order_and_the_last_is_the_interpreters_output():
    data, tensor = _model_and_input(SMALL)
    ops = operator_outputs(data, tensor)
    assert [op.index for op in ops] == list(range(13))
    assert [op.op_type for op in ops[:3]] == ["QUANTIZE", "CONV_2D", "MAX_POOL_2D"]
    assert ops[9].op_type == "FULLY_CONNECTED" and ops[11].op_type == "SOFTMAX"
    plain = make_interpreter(data, HOST_ARENA_BYTES)
    plain.set_input(np.frombuffer(tensor, np.uint8).reshape(1, 50, 50, 3), 0)
    plain.invoke()
    (last,) = ops[-1].outputs
    assert last.tensor_index == 26 and last.shape == (1, 2) and last.name
    np.testing.assert_array_equal(last.array, plain.get_output(0))
    assert ops[1].outputs[0].shape == (1, 50, 50, 2) and ops[1].outputs[0].array.dtype == np.int8


# Where LiteRT legitimately departs from TFLM: its optimized kernels (gemmlowp/ruy) round some convolutions
# differently, and its reference FULLY_CONNECTED rounds differently from TFLM's on ad01. There the first
# departing operator is off by one quantization step, and later operators inherit it.
EXACT = {
    SMALL: ("litert", "litert_ref"),
    "mlperf_tiny/keyword_spotting.tflite": ("litert", "litert_ref"),
    RESIDUAL: ("litert_ref",),
    "mlperf_tiny_reference/pretrainedResnet_quant.tflite": ("litert_ref",),
    "mlperf_tiny_reference/ad01_int8.tflite": (),
}


@pytest.mark.parametrize("relative", EXACT)
@pytest.mark.parametrize("runtime", ["litert", "litert_ref"])
def test_tflm_and_litert_agree_on_every_operator(relative, runtime):
    data, tensor = _model_and_input(relative)
    tflm = operator_outputs(data, tensor)
    litert = operator_outputs(data, tensor, runtime=runtime)
    assert [op.op_type for op in litert] == [op.op_type for op in tflm]
    differing = _differing(tflm, litert)
    if runtime in EXACT[relative]:
        assert differing == []
    else:
        assert differing, "now equal: move it to EXACT"
        first = differing[0]
        pairs = zip(tflm[first].outputs, litert[first].outputs, strict=True)
        assert max(_steps(x.array, y.array) for x, y in pairs) == 1


@pytest.mark.parametrize("operator", [0, 6, 12])
def test_a_planted_fault_changes_element_zero_of_its_operator_by_one(operator):
    data, tensor = _model_and_input(SMALL)
    clean = operator_outputs(data, tensor)
    faulty = operator_outputs(data, tensor, perturb_op=operator)
    assert _differing(clean, faulty)[0] == operator  # every earlier operator is unchanged
    before, after = clean[operator].outputs[0].array, faulty[operator].outputs[0].array
    assert after.dtype == before.dtype and after.shape == before.shape
    info = np.iinfo(before.dtype)
    first = int(before.reshape(-1)[0])
    assert int(after.reshape(-1)[0]) == (info.min if first == info.max else first + 1)
    np.testing.assert_array_equal(after.reshape(-1)[1:], before.reshape(-1)[1:])


def test_a_planted_fault_reaches_the_later_operators():
    data, tensor = _model_and_input(SMALL)
    differing = _differing(operator_outputs(data, tensor), operator_outputs(data, tensor, perturb_op=6))
    assert differing[0] == 6 and len(differing) > 1  # MAX_POOL_2D 6 feeds CONV_2D 7


@pytest.mark.parametrize("runtime", ["tflm", "litert_ref"])
def test_a_planted_fault_on_a_residual_model_reaches_the_end(runtime):
    data, tensor = _model_and_input(RESIDUAL)
    faulty = operator_outputs(data, tensor, perturb_op=36, runtime=runtime)
    differing = _differing(operator_outputs(data, tensor, runtime=runtime), faulty)
    assert differing[0] == 36 and len(differing) > 20
    assert any(faulty[index].op_type == "ADD" for index in differing)  # through a residual's second reader


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        (np.array([127, 5], np.int8), [0x80, 5]),
        (np.array([-1, 5], np.int8), [0x00, 5]),
        (np.array([255], np.uint8), [0x00]),
        (np.array([32767, 1], np.int16), [0x00, 0x80, 0x01, 0x00]),
        (np.array([255], np.int16), [0x00, 0x01]),  # the carry crosses into the next byte
        (np.array([2**31 - 1], np.int32), [0x00, 0x00, 0x00, 0x80]),
        (np.array([True, False]), [0x02, 0x00]),  # as the device core adds to a bool's byte
        (np.array([0.5, 2.0], np.float32), list(np.array([1.5, 2.0], np.float32).view(np.uint8))),
        (np.array([1.0], np.float16), [0x01, 0x3C]),  # another float: its first byte alone
    ],
)
def test_the_fault_adds_one_as_the_device_core_does(array, expected):
    result = perturbed(array)
    assert result.dtype == array.dtype and result.shape == array.shape
    assert list(result.view(np.uint8)) == expected
    assert list(array.view(np.uint8)) != expected  # the original is left alone


def _graph(data: bytes):
    return schema.ModelT.InitFromPackedBuf(bytearray(data), 0).subgraphs[0]


def _cuts_across_a_residual(data: bytes) -> list[int]:
    """Cuts whose later operators read a tensor that the operator before the cut did not write."""
    graph = _graph(data)
    cuts = []
    for operator in range(len(graph.operators) - 1):
        if set(split_after(data, operator).inputs) - {int(i) for i in graph.operators[operator].outputs}:
            cuts.append(operator)
    return cuts


def test_the_split_model_computes_the_later_operators_as_the_whole_model_does():
    data, tensor = _model_and_input(RESIDUAL)
    clean = operator_outputs(data, tensor)
    values = {t.tensor_index: t.array for op in clean for t in op.outputs}
    dtype, shape = TflmTensors(data).input_layouts()[0]
    values[_graph(data).inputs[0]] = np.frombuffer(tensor, dtype).reshape(shape)
    cuts = _cuts_across_a_residual(data)
    assert len(cuts) >= 3
    for operator in [cuts[0], cuts[len(cuts) // 2], cuts[-1]]:
        split = split_after(data, operator)
        assert len(split.inputs) >= 2 and split.first_operator == operator + 1
        later = run_after(data, operator, {i: v for i, v in values.items() if i in split.inputs})
        for op in clean[operator + 1 :]:
            for output in op.outputs:
                np.testing.assert_array_equal(later[output.tensor_index], output.array, err_msg=f"{op.index}")


FIXTURES = [
    "tflm/audio_preprocessor_int8.tflite",  # custom signal operators; a scalar tensor crosses the cut
    "tflm/person_detect.tflite",
    "mlperf_tiny/visual_wake_words.tflite",
    "mlperf_tiny_reference/ad01_int8.tflite",
    "wake_vision_zoo/wv_quality_mcunet-10fps_vww.tflite",
    "wake_vision_zoo/wv_quality_micronets_vww2_50_50_INT8.tflite",
]


@pytest.mark.parametrize("relative", FIXTURES)
def test_cuts_anywhere_compute_what_the_whole_model_does(relative):
    data, tensor = _model_and_input(relative, seed=2)
    clean = operator_outputs(data, tensor)
    values = {t.tensor_index: t.array for op in clean for t in op.outputs}
    dtype, shape = TflmTensors(data).input_layouts()[0]
    values[_graph(data).inputs[0]] = np.frombuffer(tensor, dtype).reshape(shape)
    for operator in sorted({0, len(clean) // 3, len(clean) // 2, len(clean) - 2}):
        later = run_after(data, operator, values)
        assert sorted(later) == sorted(t.tensor_index for op in clean[operator + 1 :] for t in op.outputs)
        for op in clean[operator + 1 :]:
            for output in op.outputs:
                np.testing.assert_array_equal(later[output.tensor_index], output.array, err_msg=f"{op.index}")


def test_a_model_with_state_is_not_cut():
    data, _ = _model_and_input(SMALL)
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    model.subgraphs[0].tensors[20].isVariable = True
    builder = flatbuffers.Builder(1 << 14)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    with pytest.raises(UserError, match="a fault cannot be planted in a model with state"):
        split_after(bytes(builder.Output()), 3)


def test_a_cut_after_the_last_operator_is_refused():
    data, _ = _model_and_input(SMALL)
    with pytest.raises(ValueError, match="no operator"):
        split_after(data, 12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"perturb_op": 13}, "perturb_op 13 is not an operator of this model: it has 0..12"),
        ({"perturb_op": -1}, "perturb_op -1 is not an operator"),
        ({"runtime": "onnx"}, "no layer reference runtime 'onnx'"),
    ],
)
def test_bad_requests_are_refused_in_one_line(kwargs, message):
    data, tensor = _model_and_input(SMALL)
    with pytest.raises(UserError, match=message):
        operator_outputs(data, tensor, **kwargs)


def test_an_input_of_the_wrong_size_is_refused():
    data, tensor = _model_and_input(SMALL)
    with pytest.raises(UserError, match=r"the input is 7499 bytes, but the model's input uint8\[1, 50, 50, 3\]"):
        operator_outputs(data, tensor[:-1])


def test_operator_digests_summarise_each_output_and_name_the_perturbed_operator():
    data, tensor = _model_and_input(SMALL)
    outputs = operator_outputs(data, tensor)
    digests = operator_digests(data, tensor)
    assert [(d.index, d.op_type) for d in digests] == [(o.index, o.op_type) for o in outputs]
    for digest, op in zip(digests, outputs, strict=True):
        assert digest.outputs == tuple((t.tensor_index, t.shape, tensor_digest(t.array)) for t in op.outputs)
    faulty = operator_digests(data, tensor, perturb_op=6)
    departing = [
        d.index
        for d, f in zip(digests, faulty, strict=True)
        if not all(a[2].matches(b[2]) for a, b in zip(d.outputs, f.outputs, strict=True))
    ]
    assert departing[0] == 6 and len(departing) > 1


def test_a_model_of_two_inputs_is_refused():
    data, _ = _model_and_input(RESIDUAL)
    two = split_after(data, _cuts_across_a_residual(data)[0])
    assert len(two.inputs) == 2
    with pytest.raises(UserError, match="a layer trace runs models with one input; this model has 2"):
        operator_outputs(two.data, b"")
