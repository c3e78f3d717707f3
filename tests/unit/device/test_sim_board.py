"""The virtual board process: the C core on a pseudo-terminal running the TFLM host interpreter."""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from harness.boards import get_board
from harness.device.drivers.virtual import sim_board_process
from harness.device.launch import connect
from harness.errors import LinkError
from harness.link.client import DeviceError
from harness.link.protocol import ErrorCode, Msg, load_input_payload
from harness.model.references import TflmReference
from harness.model.tflite_file import read_tflite


def _children() -> set[int]:
    found = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        found |= {int(pid) for pid in (task / "children").read_text().split()}
    return found


def test_virtual_board_runs_the_model_like_the_host_interpreter(small_model):
    model = read_tflite(small_model)
    reference = TflmReference(model)
    rng = np.random.default_rng(3)
    with connect(get_board("sim"), read_tflite(small_model)) as client:
        info = client.info
        assert info.board_id == "sim" and info.build_id.startswith("sim-")
        assert info.model_sha256_prefix == model.sha256[:16]
        assert info.input.same_layout(model.input) and info.output.same_layout(model.output)
        assert 0 < info.arena_used < info.arena_configured
        for _ in range(5):
            tensor = rng.integers(0, 256, model.input.shape, dtype=np.uint8)
            result = client.run(tensor.tobytes())
            assert result.output == reference.run(tensor)
            assert result.timing.micros > 0


def test_virtual_board_is_gone_when_the_block_ends(small_model):
    before = _children()
    with sim_board_process(get_board("sim"), small_model) as pty_path:
        assert Path(pty_path).exists()
        assert _children() - before
    assert not (_children() - before)


def _sim_with_arena(arena_bytes: int):
    sim = get_board("sim")
    return dataclasses.replace(sim, firmware=dataclasses.replace(sim.firmware, arena_bytes=arena_bytes))


def test_an_arena_too_small_for_the_model_is_reported_in_hello(small_model):
    with connect(_sim_with_arena(15000), read_tflite(small_model)) as client:
        assert client.info.runner_status != 0
        with pytest.raises(DeviceError) as error:
            client.request(Msg.LOAD_INPUT, load_input_payload(0, b"x"))
    assert error.value.code == ErrorCode.MODEL_NOT_READY


def test_a_board_that_dies_while_starting_is_a_clear_link_error(small_model):
    # TFLM's host interpreter crashes outright on a tiny arena: the process is gone, not hung.
    model = read_tflite(small_model)
    with pytest.raises(LinkError, match="the virtual board did not start"), connect(_sim_with_arena(100), model):
        pass


def test_stopping_a_board_process_closes_its_pipe():
    import subprocess

    from harness.device.processes import stop

    proc = subprocess.Popen(["sleep", "30"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    stop(proc)
    assert proc.stdout.closed


def test_a_board_whose_frontend_cannot_be_set_up_leaves_no_pty_open():
    from harness.device.sim_board import SimBoard
    from tests.fake_runner import ChecksumRunner

    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(AttributeError):
        SimBoard(
            ChecksumRunner(16, 2), board_id="b", build_id="x", rx_frame=524, tx_frame=524, rx_buffer=4096,
            frontend=object(),  # no model_info: the frontend's runner cannot be made
        )  # fmt: skip
    assert set(os.listdir("/proc/self/fd")) <= before


def test_a_model_that_fails_to_load_again_gives_a_failed_status_not_an_exception():
    from harness.device.sim_board import RUNNER_SETUP_FAILED, TflmRunner

    runner = TflmRunner(b"not a model", 1024, fresh_on_setup=True)
    assert runner.setup(None) == RUNNER_SETUP_FAILED
