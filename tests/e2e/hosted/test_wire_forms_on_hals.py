"""The real board HALs compiled for this machine (harness/device/hosted_hal.py) widen the default model's input
from one byte per element, as every board running firmware/core does: the raw input's outputs, a quarter of the
bytes on the wire."""

import pytest

from tests.input_form_runs import assert_widened_as_raw, eval_rows_and_link


@pytest.mark.parametrize("name", ["hal_stm32duino", "hal_mbed"])  # a UART HAL and the USB CDC one
def test_a_hal_widens_the_default_models_input(tmp_path, name, vww_model):
    args = ("--board", name, "--limit", "3")
    raw = eval_rows_and_link(tmp_path / "raw", "raw", *args)
    widened = eval_rows_and_link(tmp_path / "smallest", "smallest", *args)
    assert_widened_as_raw(raw, widened, min_ratio=3.8)
