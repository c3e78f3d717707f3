"""The MLPerf Tiny / EEMBC DUT protocol: the C DUT in firmware/eembc on a pseudo-terminal, the host driver."""

import json
import os
import select
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pyarrow.parquet as pq
import pytest
import serial

from harness.device.sim_board import LinkEmulation, SimBoard
from harness.errors import LinkError
from harness.link.eembc import EembcClient, EembcError
from harness.tensors import TensorSpec
from tests.fake_runner import UINT8, ChecksumRunner, expected_output


@contextmanager
def eembc_dut(runner, emulation=None, computation=None):
    """The C DUT serving `runner`; `computation` (harness/model/dut.py): what it computes, else the model's."""
    with SimBoard(
        runner,
        board_id="test-dut",
        build_id="test-build",
        rx_frame=524,
        tx_frame=524,
        rx_buffer=4096,
        emulation=emulation,
        eembc_model="ad01" if computation else "vww01",
        eembc_computation=computation.kind if computation else "model",
    ) as board:
        stop = threading.Event()
        thread = threading.Thread(target=lambda: [board.poll(20) for _ in iter(stop.is_set, True)], daemon=True)
        thread.start()
        port = serial.Serial(board.pty_path, baudrate=115200, timeout=0.05)
        try:
            if computation:
                specs = (computation.input, computation.output)
            else:
                size_in, size_out = runner.model_info.input.bytes, runner.model_info.output.bytes
                specs = (TensorSpec(UINT8, (1, n), 1.0, 0, n) for n in (size_in, size_out))
            yield port, EembcClient(port, *specs, computation=computation, timeout=1.0, infer_timeout=2.0)
        finally:
            stop.set()
            thread.join()
            port.close()


def _raw(port, text: str, wait: float = 0.5) -> list[str]:
    port.write(text.encode())
    deadline, got = time.monotonic() + wait, b""
    while time.monotonic() < deadline and not got.endswith(b"m-ready\r\n"):
        got += port.read(256)
    return got.decode().split("\r\n")[:-1]


def test_dut_prints_the_reference_boot_banner():
    runner = ChecksumRunner(4, 2)
    kwargs = dict(board_id="b", build_id="x", rx_frame=524, tx_frame=524, rx_buffer=4096, eembc_model="kws01")
    with SimBoard(runner, **kwargs) as board:
        fd = os.open(board.pty_path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)  # pyserial would flush it
        got, deadline = b"", time.monotonic() + 2
        try:
            while not got.endswith(b"m-ready\r\n") and time.monotonic() < deadline:
                if select.select([fd], [], [], 0.05)[0]:
                    got += os.read(fd, 4096)
        finally:
            os.close(fd)
        banner = got.decode().split("\r\n")
    assert banner[0] == "m-timestamp-mode-performance" and banner[1].startswith("m-lap-us-")
    assert banner[2:] == ["m-init-done", "m-ready", ""]


def test_dut_speaks_the_reference_protocol():
    with eembc_dut(ChecksumRunner(4, 2)) as (port, _):
        assert _raw(port, "name%") == ["m-name-dut-[test-dut]", "m-ready"]
        assert _raw(port, "profile%")[1] == "m-model-[vww01]"
        assert _raw(port, "db load 4%") == ["m-[Expecting 4 bytes]", "m-ready"]
        assert _raw(port, "db 0102%") == ["m-ready"]
        assert _raw(port, "db 0g%") == ["e-[Invalid hex digit '0g']", "m-ready"]
        assert _raw(port, "db 030%") == ["e-[Insufficent number of hex digits]", "m-ready"]
        assert _raw(port, "db 0304%") == ["m-load-done", "m-ready"]
        lines = _raw(port, "infer 3 1%")
        assert lines[:3] == ["m-warmup-start-1", "m-warmup-done", "m-infer-start-3"]
        assert lines[3].startswith("m-lap-us-") and lines[4].startswith("m-lap-us-")
        assert lines[5:] == ["m-infer-done", "m-results-[10.000000,11.000000,]", "m-ready"]  # sum 1+2+3+4
        assert _raw(port, "bogus%") == ["e-[Unknown command: bogus]", "m-ready"]
        assert _raw(port, "db load 999999%") == ["Supplied buffer size 999999 exceeds maximum of 27648\nm-ready"]


def test_host_driver_runs_samples_and_checks_every_answer():
    data = bytes(range(200))
    with eembc_dut(ChecksumRunner(len(data), 3), LinkEmulation(0, 0, 30)) as (_, client):
        info = client.hello()
        assert (info.board_id, info.build_id, info.protocol_version) == ("test-dut", "eembc:vww01", 0)
        assert (info.arena_configured, info.arena_used) == (None, None)  # EEMBC's DUT does not report them
        results = list(client.run_stream([data, data[::-1]]))
        assert [r.output for r in results] == [expected_output(data, 3), expected_output(data[::-1], 3)]
        assert all(r.timing.seconds >= 0.03 for r in results)
        # name twice (the first ends a half-received command), profile, timestamp; load, 7 chunks, infer
        assert client.stats.frames_sent == 4 + 2 * (1 + 7 + 1)
        with pytest.raises(LinkError, match="input is 5 bytes"):
            client.load_input(bytes(5))
        with pytest.raises(EembcError, match="Unknown command"):
            client.command("bogus")


def test_infer_timeout_scales_with_the_count_and_a_short_load_is_caught():
    data = bytes(50)
    with eembc_dut(ChecksumRunner(len(data), 2), LinkEmulation(0, 0, 50)) as (_, client):
        client.hello()
        client.run(data)  # 50 ms seen: later waits are 5 x 50 ms per inference
        assert client._infer_wait(40) == pytest.approx(client.timeout + 40 * 5 * client._slowest_inference)
        client.invoke(count=20)  # one second of inferences: well inside the scaled wait
        client.command("db load 50")
        client.command("db " + bytes(10).hex())
        with pytest.raises(EembcError, match="Loaded 10 bytes"):
            client.invoke()


def _device_outputs(tmp_path, *args) -> list[bytes]:
    results = tmp_path / args[-1]
    command = [sys.executable, "-m", "harness", "eval", "--model", "wv_quality_k_2_c_3", "--limit", "4"]
    done = subprocess.run([*command, "--results", str(results), *args[:-1]], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (run,) = results.iterdir()
    return pq.read_table(run / "samples.parquet").column("device_output").to_pylist()


@pytest.mark.slow
def test_eval_over_the_eembc_protocol_gives_the_device_results_of_ours(tmp_path, small_model):
    ours = _device_outputs(tmp_path, "ours")
    eembc = _device_outputs(tmp_path, "--protocol", "eembc", "eembc")
    assert eembc == ours and len(ours) == 4
    (run,) = (tmp_path / "eembc").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["arena"]["used"] is None and summary["arena"]["configured"] is None


def test_the_c_dut_scores_float_features_as_the_reference_ad_submission(tmp_path):
    """Quantized as QuantizeFloatToInt8 (halves away from zero, clamped), scored as calculate_result and
    printed with %0.3f: the C DUT's m-results equals harness/model/dut.py's score on the host's TFLM."""
    import numpy as np

    from harness.device.sim_board import TflmRunner
    from harness.model.dut import ReconstructionError
    from harness.model.references import TflmReference
    from harness.model.tflite_file import read_tflite
    from tests.autoencoder_model import autoencoder_model

    data = autoencoder_model(input_quant=(0.5, 1))  # v / 0.5 is exact: quarter steps give exact halves
    (tmp_path / "m.tflite").write_bytes(data)
    model = read_tflite(tmp_path / "m.tflite")
    computation, reference = ReconstructionError(model.input, model.output), TflmReference(model)
    rng = np.random.default_rng(4)
    halves = (rng.integers(-300, 300, 640) * 0.5 + 0.25).astype(np.float32).reshape(1, 640)
    huge = rng.choice([-1e6, 1e6, 0.25, -0.25], 640).astype(np.float32).reshape(1, 640)
    with eembc_dut(TflmRunner(data, 1 << 20), computation=computation) as (_, client):
        client.hello()
        for features in (halves, huge, rng.normal(0, 20, (1, 640)).astype(np.float32)):
            assert client.run(features.tobytes()).output == computation.result(reference.run, features)
    to_even = np.clip(np.round(halves / np.float32(0.5)) + 1, -128, 127).astype(np.int8)
    assert not np.array_equal(to_even, computation.to_model(halves))  # halves told apart: the check can fail
    with eembc_dut(TflmRunner(data, 1 << 20), computation=computation) as (port, _):
        _raw(port, "db load 4%"), _raw(port, "db 00000000%")  # the model's 4 int8 values would not do: 4 floats
        assert "e-[Loaded 4 bytes, the input tensor needs 2560]" in _raw(port, "infer 1 0%")


def test_the_c_dut_refuses_to_score_a_model_that_is_no_int8_autoencoder():
    from harness.model.dut import ReconstructionError

    runner = ChecksumRunner(4, 2)  # uint8, 4 in and 2 out: no reconstruction of its input
    spec = TensorSpec(9, (1, 4), 0.5, 0, 4)
    with eembc_dut(runner, computation=ReconstructionError(spec, spec)) as (port, _):
        assert _raw(port, "db load 16%")[0] == "m-[Expecting 16 bytes]"
        assert _raw(port, "db " + "00" * 16 + "%")[0] == "m-load-done"
        assert _raw(port, "infer 1 0%") == ["e-[The model failed to load]", "m-ready"]
