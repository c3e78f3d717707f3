"""The default model's float32 input widened on QEMU's Cortex-M7 from one byte per element: the same outputs as
the raw float32 input, a quarter of the bytes on the wire (harness/link/input_forms.py)."""

import shutil

import pytest

from tests.conftest import TFLM_TREE, needs_tflm_tree
from tests.input_form_runs import assert_widened_as_raw, eval_rows_and_link

pytestmark = [
    pytest.mark.qemu,
    needs_tflm_tree,
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
]


def test_widened_input_gives_the_raw_inputs_outputs_on_qemu_m7(tmp_path, vww_model):
    args = ("--board", "qemu_m7", "--tflm", TFLM_TREE, "--limit", "3", "--no-pools")
    raw = eval_rows_and_link(tmp_path / "raw", "raw", *args)
    widened = eval_rows_and_link(tmp_path / "smallest", "smallest", *args)
    assert_widened_as_raw(raw, widened, min_ratio=3.8)
