"""Which CMSIS-NN sources a firmware compiles: the files defining what its kernels reach, read from the text."""

import pytest

from harness.errors import UserError
from harness.firmware.cmsis_nn import CmsisNnSources
from harness.firmware.tflm_tree import TflmTree
from tests.conftest import FIXTURE_TFLM

CMSIS = "third_party/cmsis_nn/"


def _real_tree() -> TflmTree:
    if not (FIXTURE_TFLM / "cmsis_nn").is_dir():
        pytest.skip("needs ../shared/fixtures/tflm (absent in a fresh clone)")
    return TflmTree(FIXTURE_TFLM / "cmsis_nn")


def _names(tree: TflmTree, operators: list[str]) -> set[str]:
    return {p.name for p in tree.sources_for(operators) if p.relative_to(tree.root).as_posix().startswith(CMSIS)}


def test_a_conv_only_firmware_compiles_the_convolutions_and_what_they_call():
    tree = _real_tree()
    conv = _names(tree, ["CONV_2D"])
    # The wrapper TFLM's conv.cc calls, what the wrapper dispatches to, and their helpers, transitively.
    assert {"arm_convolve_wrapper_s8.c", "arm_convolve_s8.c", "arm_convolve_1x1_s8_fast.c"} <= conv
    assert {
        "arm_nn_mat_mult_nt_t_s8.c",
        "arm_convolve_get_buffer_sizes_s8.c",
        "arm_s8_to_s16_unordered_with_offset.c",
    } <= conv
    assert not {name for name in conv if name.startswith(("arm_depthwise", "arm_fully_connected", "arm_softmax"))}
    cmsis = [p for p in tree.sources if p.relative_to(tree.root).as_posix().startswith(CMSIS)]
    assert len(conv) < len(cmsis) / 3
    # The framework always comes along; other operators' kernel files do not.
    chosen = {p.relative_to(tree.root).as_posix() for p in tree.sources_for(["CONV_2D"])}
    assert "tensorflow/lite/micro/micro_interpreter.cc" in chosen
    assert "tensorflow/lite/micro/kernels/cmsis_nn/depthwise_conv.cc" not in chosen


def test_every_operator_brings_its_own_cmsis_nn_files():
    tree = _real_tree()
    assert {"arm_depthwise_conv_wrapper_s8.c", "arm_depthwise_conv_s8_opt.c"} <= _names(tree, ["DEPTHWISE_CONV_2D"])
    fully_connected = _names(tree, ["FULLY_CONNECTED"])
    assert {"arm_fully_connected_s8.c", "arm_nn_vec_mat_mult_t_s8.c", "arm_vector_sum_s8.c"} <= fully_connected
    assert "arm_softmax_s8.c" in _names(tree, ["SOFTMAX"]) and not _names(tree, ["RESHAPE"])
    # The LSTM kernel reads the sigmoid table: data counts like functions.
    assert "arm_nntables.c" in _names(tree, ["UNIDIRECTIONAL_SEQUENCE_LSTM"])


def _library(root, sources: dict[str, str], header: str = ""):
    (root / "Include").mkdir(parents=True)
    (root / "Include" / "arm_nnfunctions.h").write_text(header)
    for name, text in sources.items():
        (root / "Source" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "Source" / name).write_text(text)
    return CmsisNnSources(root)


def test_the_closure_follows_calls_inline_functions_macros_and_data(tmp_path):
    header = (
        "int arm_top(int x);\nint arm_leaf(int x);\nextern const int arm_table[4];\n"
        "static inline int arm_inline(int x) { return arm_leaf(x); }\n"
        "#define ARM_LOOKUP(i) (arm_table[(i)])\n"
    )
    library = _library(
        tmp_path / "cmsis_nn",
        {
            "A/arm_top.c": '#include "arm_nnfunctions.h"\nint arm_top(int x)\n{\n'
            "    return arm_inline(x) + ARM_LOOKUP(x);\n}\n",
            "B/arm_leaf.c": "int arm_leaf(int x) { return x; }\n/* arm_unused(x) in a comment */\n",
            "B/arm_tables.c": "const int arm_table[4] = {1, 2, 3, 4};\n",
            "B/arm_unused.c": "static int helper(void) { return 0; }\nint arm_unused(int x) { return helper() + x; }\n",
        },
        header,
    )
    user = tmp_path / "conv.cc"
    needed = library.needed({user: "void Eval() { arm_top(1); }\n"})
    assert [p.name for p in needed] == ["arm_top.c", "arm_leaf.c", "arm_tables.c"]
    assert library.needed({user: "int Eval() { return 0; }\n"}) == []


def test_a_call_of_a_function_no_source_defines_is_an_error_naming_it(tmp_path):
    library = _library(
        tmp_path / "cmsis_nn",
        {"A/arm_top.c": "int arm_top(int x) { return arm_missing_s8(x); }\n"},
        "int arm_top(int x);\nint arm_missing_s8(int x);\n",
    )
    with pytest.raises(UserError, match=r"arm_top\.c calls the CMSIS-NN function arm_missing_s8, which no source"):
        library.needed({tmp_path / "conv.cc": "void Eval() { arm_top(1); }\n"})
