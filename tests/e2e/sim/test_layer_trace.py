"""Layer traces on the virtual board: the C core's digests of every operator's outputs equal the TFLM host
interpreter's tensors (every tensor kept), on every fixture model; a planted fault is found where it was planted."""

import time

import numpy as np
import pytest

from harness.boards import get_board
from harness.device.launch import connect
from harness.model.tflite_file import read_tflite
from tests.layer_reference import device_trace, first_difference, fixture_card_models, host_trace, one_input

FAULT_OP = 8  # MEAN in wv_quality_k_2_c_3: its 8 bytes feed every later operator, so the fault reaches them all


def _sim_trace(model_path, tensor: np.ndarray):
    with connect(get_board("sim"), read_tflite(model_path)) as client:
        return device_trace(client.layer_trace(tensor.tobytes())), client.run(tensor.tobytes()).output


def test_the_virtual_boards_trace_is_the_host_interpreters_operator_by_operator(small_model):
    data = small_model.read_bytes()
    tensor = one_input(data)
    device, _ = _sim_trace(small_model, tensor)
    host = host_trace(data, tensor)
    assert len(device) == len(host) == 13
    assert device == host, first_difference(device, host)
    assert [name for name, _ in device][:3] == ["QUANTIZE", "CONV_2D", "MAX_POOL_2D"]


@pytest.mark.parametrize("fault_op", [2, FAULT_OP])
def test_a_planted_fault_is_the_first_operator_that_departs(small_model, monkeypatch, fault_op):
    data = small_model.read_bytes()
    tensor = one_input(data)
    host = host_trace(data, tensor)
    clean_output = _sim_trace(small_model, tensor)[1]
    monkeypatch.setenv("HARNESS_PLANT_FAULT_OP", str(fault_op))
    device, output = _sim_trace(small_model, tensor)
    assert first_difference(device, host) == fault_op
    (_, perturbed), (_, expected) = device[fault_op][1][0], host[fault_op][1][0]
    assert perturbed[2] != expected[2] and perturbed[5] == expected[5] + 1  # CRC; 1 added to the sum (no wrap here)
    if fault_op == FAULT_OP:  # every later operator departs too, and so does the model's output
        assert all(device[i] != host[i] for i in range(fault_op, len(host)))
        assert output != clean_output


def test_every_fixture_models_trace_on_the_virtual_board_equals_the_host():
    models = fixture_card_models()
    if not models:
        pytest.skip("needs ../shared/fixtures/models (absent in a fresh clone)")
    started, departed = time.monotonic(), {}
    for name, path in models.items():
        data = path.read_bytes()
        tensor = one_input(data)
        device, _ = _sim_trace(path, tensor)
        host = host_trace(data, tensor)
        if device != host:
            departed[name] = first_difference(device, host)
    print(f"{len(models)} fixture models traced on sim in {time.monotonic() - started:.0f} s")
    assert not departed, f"first departing operator by model: {departed}"


@pytest.mark.parametrize(
    ("value", "message"), [("abc", "is not an operator index"), ("13", "the model has 13 operators (0 to 12)")]
)
def test_a_bad_planted_fault_is_refused_in_one_line_before_the_board_starts(small_model, monkeypatch, value, message):
    import os
    import subprocess
    import sys

    from tests.conftest import assert_refused_in_one_line

    env = os.environ | {"HARNESS_PLANT_FAULT_OP": value}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "perf", "--model", "wv_quality_k_2_c_3", "--runs", "1"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert_refused_in_one_line(done, "HARNESS_PLANT_FAULT_OP", message)
