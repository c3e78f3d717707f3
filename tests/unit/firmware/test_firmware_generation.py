"""Firmware generation that needs no toolchain: op resolver code, TFLM tree checks, the firmware's assembly."""

import pytest

from harness.errors import UserError
from harness.firmware.tflm_tree import TflmTree, resolver_method, resolver_source
from harness.model.tflite_file import model_operators


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


def test_a_model_compiles_the_framework_and_only_its_operators_kernel_files():
    from tests.conftest import FIXTURE_TFLM, fixture_model

    if not (FIXTURE_TFLM / "cmsis_nn").is_dir():
        pytest.skip("needs ../shared/fixtures/tflm (absent in a fresh clone)")
    tree = TflmTree(FIXTURE_TFLM / "cmsis_nn")
    vww = model_operators(fixture_model("mlperf_tiny/visual_wake_words.tflite").read_bytes())
    chosen = {p.relative_to(tree.root).as_posix() for p in tree.sources_for(vww)}
    kernels = "tensorflow/lite/micro/kernels/"
    assert {kernels + f"cmsis_nn/{name}.cc" for name in ("conv", "depthwise_conv", "softmax")} <= chosen
    assert kernels + "cmsis_nn/unidirectional_sequence_lstm.cc" not in chosen and kernels + "svdf_common.cc" in chosen
    assert "tensorflow/lite/micro/micro_interpreter.cc" in chosen
    assert all(tree.kernel_files[name].relative_to(tree.root).as_posix() in chosen for name in ("CONV_2D", "SOFTMAX"))
    with pytest.raises(UserError, match="no AddNotAnOp"):
        tree.sources_for(["NOT_AN_OP"])


def test_the_makefile_and_platformio_builds_take_one_assembly(small_model, tmp_path):
    """Both build systems take the same firmware files and generated settings; what differs is said once:
    bare_main.c and .incbin model data for bare metal, a C array for PlatformIO, the self-test runner without
    a model. The build id covers the build system's files too."""
    from harness.boards import get_board
    from harness.firmware.assemble import Assembly
    from harness.model.tflite_file import read_tflite

    model = read_tflite(small_model)
    micro = tmp_path / "tree" / "tensorflow" / "lite" / "micro"
    micro.mkdir(parents=True)
    (micro / "micro_interpreter.h").write_text("")
    tree = TflmTree(tmp_path / "tree")
    qemu = Assembly(get_board("qemu_m4"), model, tree, None, bare_metal=True)
    nucleo = Assembly(get_board("nucleo_h743"), model, tree, None, bare_metal=False)
    shared = {p.name for p in qemu.sources if p.parent != qemu.board.hal_dir}
    assert shared - {p.name for p in nucleo.sources} == {"bare_main.c"}
    assert {p.name for p in nucleo.sources if p.parent != nucleo.board.hal_dir} == shared - {"bare_main.c"}
    assert qemu.defines == nucleo.defines == tree.defines
    assert set(qemu.generated("x")) == {"model.tflite", "model_data.S", "model_ops.inc", "harness_build_config.h"}
    assert set(nucleo.generated("x")) == {"model_data.cc", "model_ops.inc", "harness_build_config.h"}
    assert qemu.generated("x")["model_ops.inc"] == nucleo.generated("x")["model_ops.inc"]
    selftest = Assembly(get_board("qemu_m4"), None, None, None, bare_metal=True)
    assert "no_model_runner.c" in {p.name for p in selftest.sources} and selftest.defines == []
    assert "no_model_runner.c" not in {p.name for p in qemu.sources}
    with pytest.raises(UserError, match="'tflm' PATH"):
        Assembly(get_board("qemu_m4"), model, None, None, bare_metal=True)

    def makefile(flags: str):
        return lambda build_id: {"Makefile": f"# {build_id}\nCFLAGS := {flags}\n".encode()}

    assert qemu.build_id(makefile("-Os")) == qemu.build_id(makefile("-Os")) != qemu.build_id(makefile("-O2"))
    assert qemu.build_id(makefile("-Os")).startswith("qemu_m4-")


def test_the_layer_trace_and_a_planted_fault_are_build_settings_the_build_id_covers(small_model, tmp_path):
    from harness.boards import get_board
    from harness.firmware.assemble import Assembly, LayerTraceBuild
    from harness.model.tflite_file import read_tflite

    micro = tmp_path / "tree" / "tensorflow" / "lite" / "micro"
    micro.mkdir(parents=True)
    (micro / "micro_interpreter.h").write_text("")
    tree, model = TflmTree(tmp_path / "tree"), read_tflite(small_model)

    def assembly(trace: LayerTraceBuild) -> Assembly:
        return Assembly(get_board("qemu_m7"), model, tree, None, bare_metal=True, trace=trace)

    builds = [assembly(LayerTraceBuild()), assembly(LayerTraceBuild(enabled=False)), assembly(LayerTraceBuild(True, 2))]
    headers = [a.generated("x")["harness_build_config.h"].decode() for a in builds]
    assert "#define HP_LAYER_TRACE 1\n" in headers[0] and "#define HP_PLANT_FAULT_OP -1\n" in headers[0]
    assert "#define HP_LAYER_TRACE 0\n" in headers[1] and "#define HP_PLANT_FAULT_OP 2\n" in headers[2]
    assert len({a.build_id(lambda _: {}) for a in builds}) == 3  # a fault build never stands in for a clean one
