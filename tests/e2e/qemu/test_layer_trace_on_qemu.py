"""Layer traces on qemu_m7 with CMSIS-NN kernels: the firmware's digests, taken in TFLM's profiler hook from the
arena as each operator ends, equal the TFLM host interpreter's tensors on every fixture model; a firmware built with
a planted fault (HP_PLANT_FAULT_OP) departs first at that operator, exactly as the virtual board's planted fault."""

import dataclasses
import shutil
import time

import pytest

from harness.boards import get_board
from harness.device.launch import ConnectOptions, connect
from harness.device.qemu import qemu_link
from harness.errors import BuildError, UserError
from harness.firmware.assemble import LayerTraceBuild
from harness.firmware.build import build_firmware
from harness.firmware.tflm_tree import TflmTree
from harness.link.client import DeviceClient
from harness.model.tflite_file import read_tflite
from tests.conftest import TFLM_TREE, needs_tflm_tree
from tests.layer_reference import device_trace, first_difference, fixture_card_models, host_trace, one_input

pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
        reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
    ),
    needs_tflm_tree,
]

BOARD = "qemu_m7"
LARGE_ARENA = 3 << 20  # of qemu_m7's 4 MB of RAM, for a model its board file's 1 MB arena cannot hold
FAULT_OP = 8  # MEAN in wv_quality_k_2_c_3: the fault reaches every later operator


class DoesNotFit(Exception):
    """The model does not load on the board (its arena or memory is too small): HELLO's runner status."""


def _qemu_trace(model_path, tensor, arena_bytes: int | None = None):
    board = get_board(BOARD)
    if arena_bytes:
        board = dataclasses.replace(board, firmware=dataclasses.replace(board.firmware, arena_bytes=arena_bytes))
    with connect(board, read_tflite(model_path), ConnectOptions(tflm=TflmTree(TFLM_TREE))) as client:
        if client.info.runner_status != 0:
            raise DoesNotFit(f"runner status {client.info.runner_status}")
        return device_trace(client.layer_trace(tensor.tobytes()))


def test_the_qemu_firmwares_trace_is_the_host_interpreters_operator_by_operator(small_model):
    import numpy as np

    from tests.layer_reference import digest

    data = small_model.read_bytes()
    tensor = one_input(data)
    host = host_trace(data, tensor)
    model = read_tflite(small_model)
    with connect(get_board(BOARD), model, ConnectOptions(tflm=TflmTree(TFLM_TREE))) as client:
        device = device_trace(client.layer_trace(tensor.tobytes()))
        conv = client.layer_tensor(tensor.tobytes(), 1, 0)  # CONV_2D's 5000 bytes: two answer frames
    assert len(device) == 13 and device == host, first_difference(device, host)
    assert digest(np.frombuffer(conv, np.int8)) == host[1][1][0][1]


def test_a_planted_fault_build_departs_first_at_its_operator_as_on_the_virtual_board(small_model):
    model = read_tflite(small_model)
    tensor = one_input(model.data)
    host = host_trace(model.data, tensor)
    board = get_board(BOARD)
    firmware = build_firmware(board, model, TflmTree(TFLM_TREE), None, LayerTraceBuild(plant_fault_op=FAULT_OP))
    with qemu_link(board, firmware.elf) as link:
        client = DeviceClient.over(link)
        device = device_trace(client.layer_trace(tensor.tobytes()))
        output = client.run(tensor.tobytes()).output
    assert first_difference(device, host) == FAULT_OP
    assert all(device[i] != host[i] for i in range(FAULT_OP, len(host)))  # every later operator departs
    assert device[FAULT_OP][1][0][1][5] == host[FAULT_OP][1][0][1][5] + 1  # the sum: 1 added to one element

    from harness.device.sim_board import TflmRunner
    from tests.fake_runner import core_on_pty

    runner = TflmRunner(model.data, 1 << 20, plant_fault_op=FAULT_OP)
    with core_on_pty(runner, tx_frame=4108, timeout=10) as (_, sim):
        assert device_trace(sim.layer_trace(tensor.tobytes())) == device  # the same perturbation, the same trace
        assert sim.run(tensor.tobytes()).output == output


def test_a_firmware_without_layer_tracing_refuses_in_one_line_and_is_smaller(small_model):
    from harness.firmware.elf import memory_usage

    model, board, tree = read_tflite(small_model), get_board(BOARD), TflmTree(TFLM_TREE)
    without = build_firmware(board, model, tree, None, LayerTraceBuild(enabled=False))
    with qemu_link(board, without.elf) as link, pytest.raises(UserError, match="cannot trace layers"):
        DeviceClient.over(link).layer_trace(bytes(model.input.bytes))
    traced = memory_usage(build_firmware(board, model, tree).elf)
    assert memory_usage(without.elf)["flash_bytes"] < traced["flash_bytes"]


def test_every_fixture_models_trace_on_qemu_m7_equals_the_host():
    models = fixture_card_models()
    if not models:
        pytest.skip("needs ../shared/fixtures/models (absent in a fresh clone)")
    started, departed, unfit = time.monotonic(), {}, {}
    for name, path in models.items():
        data = path.read_bytes()
        tensor = one_input(data)
        try:
            try:
                device = _qemu_trace(path, tensor)
            except DoesNotFit:
                device = _qemu_trace(path, tensor, LARGE_ARENA)
        except (BuildError, UserError, DoesNotFit) as exc:  # a model qemu_m7's 4 MB cannot hold
            unfit[name] = str(exc)
            continue
        host = host_trace(data, tensor)
        if device != host:
            departed[name] = first_difference(device, host)
    print(f"{len(models) - len(unfit)} fixture models traced on {BOARD} in {time.monotonic() - started:.0f} s; "
          f"not fitting: {unfit}")  # fmt: skip
    assert not departed, f"first departing operator by model: {departed}"
    assert not unfit, unfit
