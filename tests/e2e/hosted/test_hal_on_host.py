"""The real board HALs (firmware/boards/arduino_cortex_m, firmware/boards/espidf) compiled for this machine
against the framework stand-ins in firmware/hosted/, served on a pseudo-terminal (harness/device/hosted_hal.py).

No speed is asserted here: benchmarks/link.py measures it."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
import serial

from harness.boards import get_board
from harness.device.hosted_hal import hosted_board_process
from harness.device.launch import connect
from harness.device.selftest import run_link_test
from harness.link.client import DeviceError
from harness.link.framing import FrameDecoder, encode_frame
from harness.link.protocol import RESPONSE_BIT, ErrorCode, Msg, load_input_payload
from harness.model.tflite_file import read_tflite
from tests.conftest import fixture_model

UART_HALS = ("hal_stm32duino", "hal_espidf")
ALL_HALS = (*UART_HALS, "hal_mbed")
SAMPLES = 100  # the demo set's 98 images (docs/demo_dataset.md) and two of them mirrored
SMALL_MODEL = "wake_vision_zoo/wv_quality_k_2_c_3.tflite"  # uint8[1,50,50,3] in


def _board(name: str, **sim):
    board = get_board(name)
    return board.with_sim(**sim)


@pytest.mark.parametrize("name", UART_HALS)
@pytest.mark.parametrize("rate", [921600, 2_000_000])
def test_link_test_passes_after_set_baud(name, rate):
    board = get_board(name).with_link(baudrate=115200, switch_baudrate=rate)
    with connect(board, None) as client:
        assert client.info.max_baud == 2_000_000 and client.info.baud_applies
        assert client.stats.baud == rate and client.port.baudrate == rate
        report = run_link_test(client, board, 60_000)
    assert report.ok and report.mismatches == 0 and report.baud == rate
    assert client.stats.baud_fallbacks == 0


def test_usb_cdc_hal_says_baud_does_not_apply():
    board = get_board("hal_mbed").with_link(switch_baudrate=2_000_000)
    with connect(board, None) as client:
        assert not client.info.baud_applies and client.info.max_baud == 0
        assert client.stats.baud_fallbacks == 0  # the host did not try: HELLO offers no switch
        with pytest.raises(DeviceError) as refused:
            client.request(Msg.SET_BAUD, (921600).to_bytes(4, "little"))
        assert refused.value.code == ErrorCode.UNSUPPORTED and "does not apply" in str(refused.value)
        report = run_link_test(client, board, 60_000)
    assert report.ok and not report.baud_applies


def test_link_test_command_line_through_a_hal():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "boards",
            "link-test",
            "--board",
            "hal_stm32duino",
            "--switch-baud",
            "2000000",
            "--bytes",
            "50000",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["baud"] == 2_000_000 and report["build_id"].startswith("hosted-stm32duino-")


@pytest.fixture(scope="module")
def hundred_samples(tmp_path_factory):
    """A labels.csv folder of 100 images: the demo set and two of its images mirrored, as new files."""
    from PIL import Image, ImageOps

    from harness.eval.dataset import load_dataset

    demo = load_dataset("demo")
    root = tmp_path_factory.mktemp("hundred")
    (root / "images").mkdir()
    with open(demo.csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows[: SAMPLES - len(rows)]:
        mirrored = dict(row, filename=f"mirrored_{row['filename']}")
        image = Image.open(demo.csv_path.parent / "images" / row["filename"])
        ImageOps.mirror(image).save(root / "images" / mirrored["filename"])
        rows.append(mirrored)
    for row in rows[:-2]:
        shutil.copy(demo.csv_path.parent / "images" / row["filename"], root / "images" / row["filename"])
    with open(root / "labels.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return root


@pytest.mark.parametrize("name", ALL_HALS)
def test_a_hundred_sample_eval_matches_tflm_python(tmp_path, name, hundred_samples):
    fixture_model(SMALL_MODEL)
    switch = ["--switch-baud", "2000000"] if name in UART_HALS else []
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "eval",
            "--board",
            name,
            "--model",
            "wv_quality_k_2_c_3",
            *switch,
            "--dataset",
            str(hundred_samples),
            "--results",
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    rows = pq.read_table(run / "samples.parquet").to_pylist()
    assert len(rows) == SAMPLES
    # The pty carries every byte faithfully, so no frame arrives damaged. A resend after silence can
    # still happen when a loaded machine stalls the hosted process past a wait: that is the link's
    # designed recovery, and the outputs below show it lost nothing.
    assert json.loads((run / "summary.json").read_text())["link"]["corrupt_frames"] == 0
    assert all(row["device_output"] == row["tflm_output"] for row in rows)
    assert all(row["latency_source"] == "sim" for row in rows)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["device"]["firmware_build_id"].startswith("hosted-")


def _frames_during_an_invoke(board, chunks: int, chunk: int, invoke_ms: float = 1000, load_step: int | None = None):
    """Load a whole input, send INVOKE and, while it runs, `chunks` LOAD_INPUT frames of the next input.
    Returns (answers as (type, seq, payload), the hosted process's closing line, the burst's length)."""
    model = read_tflite(fixture_model(SMALL_MODEL))
    board = board.with_sim(emulate_invoke_ms=invoke_ms)
    report: list[str] = []
    with hosted_board_process(board, model, report) as path:
        port = serial.Serial(path, baudrate=board.link.baudrate, timeout=0.05)
        try:
            decoder, answers = FrameDecoder(), []

            def collect(count, seconds):
                deadline = time.monotonic() + seconds
                while len(answers) < count and time.monotonic() < deadline:
                    answers.extend((e.type, e.seq, e.payload) for e in decoder.feed(port.read(4096)))

            port.write(encode_frame(Msg.HELLO, 1))
            collect(1, 5)
            size = model.input.bytes
            data = np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8).tobytes()
            step = load_step or board.firmware.rx_frame_bytes - 40
            for seq, offset in enumerate(range(0, size, step), start=2):
                port.write(encode_frame(Msg.LOAD_INPUT, seq, load_input_payload(offset, data[offset : offset + step])))
                collect(len(answers) + 1, 5)
            answers.clear()
            port.write(encode_frame(Msg.INVOKE, 100))
            time.sleep(0.2)  # the invoke has started, even on a loaded machine: now only the link's buffer receives
            burst = b"".join(
                encode_frame(Msg.LOAD_INPUT, 101 + i, load_input_payload(i * chunk, data[i * chunk : (i + 1) * chunk]))
                for i in range(chunks)
            )
            port.write(burst)
            collect(1 + chunks, 1 + invoke_ms / 1e3 + len(burst) * 10 / board.link.baudrate)
        finally:
            port.close()
    return answers, report[-1] if report else "", len(burst)


LOAD_ANSWER = Msg.LOAD_INPUT | RESPONSE_BIT


def _burst_within_the_window(board):
    chunk = min(1000, board.firmware.rx_frame_bytes - 40)
    return (board.firmware.rx_buffer_bytes * 3 // 4) // (chunk + 20), chunk  # within the announced buffer


def _all_loaded_in_order(answers, chunks, chunk):
    assert [(t, s) for t, s, _ in answers] == [(Msg.INVOKE | RESPONSE_BIT, 100)] + [
        (LOAD_ANSWER, 101 + i) for i in range(chunks)
    ]
    assert [int.from_bytes(p[:4], "little") for _, _, p in answers[1:]] == [chunk * (i + 1) for i in range(chunks)]


def _last_invoke(closing):
    """(bytes the framework handed the firmware while the last invoke ran, bytes it still held at its end)."""
    found = re.search(r"last invoke: (\d+) bytes handed .*?, (\d+) still", closing)
    assert found, closing
    return int(found[1]), int(found[2])


@pytest.mark.parametrize("name", ALL_HALS)
def test_input_arriving_during_an_invoke_is_kept(name):
    board = get_board(name)
    chunks, chunk = _burst_within_the_window(board)
    answers, closing, burst = _frames_during_an_invoke(board, chunks, chunk)
    _all_loaded_in_order(answers, chunks, chunk)
    assert " 0 bytes lost at a full receive buffer" in closing, closing
    if name == "hal_mbed":  # USB CDC: the HAL's ring took the whole burst from the interrupt during the invoke
        assert _last_invoke(closing) == (burst, 0), closing
    else:  # UART: the framework's ring held it, the HAL read none while the invoke ran
        assert _last_invoke(closing) == (0, burst), closing


def test_usb_cdc_without_the_receive_callback_holds_the_host_off():
    """The same burst through the mbed HAL whose callback the core drops (a USBSerial callback table with room
    for the core's own only, as upstream attach() drops one beyond MAX_CALLBACKS_ON_IRQ): nothing is lost and
    the results are the same, but during the invoke only the core's 256-byte ring and one 64-byte packet
    fill and the HAL gets nothing, so the test above would fail without the callback."""
    board = _board("hal_mbed", cdc_callback_slots=1)
    chunks, chunk = _burst_within_the_window(board)
    answers, closing, burst = _frames_during_an_invoke(board, chunks, chunk)
    _all_loaded_in_order(answers, chunks, chunk)
    assert " 0 bytes lost at a full receive buffer" in closing, closing
    assert burst > 256 + 64 and _last_invoke(closing) == (0, 256 + 64), closing


def test_a_receive_buffer_too_small_for_the_window_loses_bytes():
    """The same burst as above into a 256-byte stm32duino ring: bytes are lost, as on the real USART, so the
    test above would fail with a buffer smaller than the window it announces."""
    board = _board("hal_stm32duino", serial_rx_buffer_size=256)
    # The first input goes in pieces the ring holds whatever the machine's load; only the burst overflows.
    answers, closing, _ = _frames_during_an_invoke(board, 3, 1000, load_step=128)
    assert answers[0][:2] == (Msg.INVOKE | RESPONSE_BIT, 100)
    loaded = [(s, int.from_bytes(p[:4], "little")) for t, s, p in answers if t == LOAD_ANSWER]
    assert loaded != [(101, 1000), (102, 2000), (103, 3000)]
    lost = int(closing.split("hosted: ")[1].split(" bytes lost")[0])
    assert lost > 0, closing


@pytest.mark.parametrize("name", ALL_HALS)
def test_a_layer_trace_through_a_hal_is_the_host_interpreters(name):
    from tests.layer_reference import device_trace, first_difference, host_trace, one_input

    path = fixture_model(SMALL_MODEL)
    data = path.read_bytes()
    tensor = one_input(data)
    with connect(get_board(name), read_tflite(path)) as client:
        device = device_trace(client.layer_trace(tensor.tobytes()))
    host = host_trace(data, tensor)
    assert len(device) == 13 and device == host, first_difference(device, host)
