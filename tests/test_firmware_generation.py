"""Firmware generation that needs no toolchain: op resolver code, TFLM tree checks, linker script."""

import pytest

from harness.errors import UserError
from harness.firmware.tflm_tree import TflmTree, model_operators, resolver_method, resolver_source


def test_resolver_method_names_follow_tflm():
    assert resolver_method("CONV_2D") == "AddConv2D"
    assert resolver_method("DEPTHWISE_CONV_2D") == "AddDepthwiseConv2D"
    assert resolver_method("FULLY_CONNECTED") == "AddFullyConnected"
    assert resolver_method("AVERAGE_POOL_2D") == "AddAveragePool2D"
    assert resolver_method("STRIDED_SLICE") == "AddStridedSlice"
    assert resolver_method("TFLite_Detection_PostProcess") == "AddDetectionPostprocess"


def test_operators_of_real_models(small_model):
    from tests.conftest import fixture_model

    vww = model_operators(fixture_model("mlperf_tiny/visual_wake_words.tflite").read_bytes())
    assert {"QUANTIZE", "CONV_2D", "DEPTHWISE_CONV_2D", "SOFTMAX", "DEQUANTIZE"} <= set(vww)
    person = model_operators(fixture_model("tflm/person_detect.tflite").read_bytes())
    assert set(person) == {"AVERAGE_POOL_2D", "CONV_2D", "DEPTHWISE_CONV_2D", "RESHAPE", "SOFTMAX"}


def test_a_folder_that_is_not_a_tflm_tree_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"create_tflm_tree\.py"):
        TflmTree(tmp_path)


def test_resolver_source_lists_each_operator_once(small_model):
    from harness.model.tflite_file import read_tflite

    source = resolver_source(read_tflite(small_model))
    count = int(source.split("HARNESS_OP_COUNT ")[1].split()[0])
    assert source.count("(r).Add") == count > 0
