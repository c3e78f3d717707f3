"""The host driver against a DUT that behaves as the MLPerf Tiny reference firmware does (tests/reference_dut.py):
nothing it sends crashes the reference parser, a load the firmware refuses in a plain line stops the run,
energy-mode firmware is named, vww01's uint8 input is sent as the reference takes it, and ad01's float
features go out as they are and its printed anomaly score comes back as the host computes it."""

import time
from contextlib import contextmanager

import numpy as np
import pytest
import serial

from harness.link.eembc import DutInputMismatch, EembcClient, EnergyModeFirmware
from harness.model.dut import ReconstructionError
from harness.tensors import TensorSpec
from tests.reference_dut import ReferenceDut, reference_outputs

INT8, FLOAT32 = 9, 1
VWW_IN = TensorSpec(INT8, (1, 96, 96, 3), 1 / 255, -128, 27648)
VWW_OUT = TensorSpec(INT8, (1, 2), 1 / 256, -128, 2)


@contextmanager
def connected(dut: ReferenceDut, input_spec=VWW_IN, output_spec=VWW_OUT, boot_first=False, computation=None):
    with dut:
        port = serial.Serial(dut.path, baudrate=115200, timeout=0.05)
        try:
            if boot_first:  # the board resets as the port opens: its banner waits in the port
                dut.boot()
                time.sleep(0.1)
            yield EembcClient(port, input_spec, output_spec, computation=computation, timeout=1.0, infer_timeout=2.0)
        finally:
            port.close()


def test_the_stand_in_crashes_on_a_bare_percent_as_the_reference_does():
    with ReferenceDut() as dut:
        port = serial.Serial(dut.path, baudrate=115200, timeout=0.05)
        port.write(b"%")
        time.sleep(0.1)
        port.close()
    assert dut.crashed


def test_hello_sends_nothing_the_reference_parser_cannot_take():
    dut = ReferenceDut()
    with connected(dut) as client:
        client._pending = b""
        client.port.write(b"db load 27")  # a command half-received when harness starts
        info = client.hello()
        assert (info.board_id, info.build_id) == ("unspecified", "eembc:vww01")
    assert not dut.crashed
    assert all(c.split() for c in dut.commands)  # every command has a token for strtok
    assert dut.commands[1:] == ["name", "profile", "timestamp"]


def test_vww01_takes_its_uint8_input_and_its_results_decode_exactly():
    rng = np.random.default_rng(3)
    dut = ReferenceDut()
    with connected(dut) as client:
        client.hello()
        client.expect("vww01", uint8_input=True)
        for _ in range(2):
            values = rng.integers(-128, 128, 27648).astype(np.int8)
            result = client.run(values.tobytes())
            assert result.output == reference_outputs(values).tobytes()  # the DUT subtracted 128 from v + 128
            assert result.timing.seconds == pytest.approx(1500e-6)
    assert "db load 27648" in dut.commands and not dut.crashed


def test_a_float32_vww_card_is_refused_before_any_sample_with_the_card_to_use():
    float_in = TensorSpec(FLOAT32, (1, 96, 96, 3), 0.0, 0, 110592)
    with connected(ReferenceDut(), float_in, TensorSpec(FLOAT32, (1, 2), 0.0, 0, 8)) as client:
        client.hello()
        with pytest.raises(DutInputMismatch, match=r"96x96x3 uint8 \(27648 bytes.*mlperf_tiny_vww01"):
            client.expect(None)
        # Past that check, the reference's own plain-line refusal of the load stops it too.
        with pytest.raises(DutInputMismatch, match=r"at most 27648 input bytes .*MAX_DB_INPUT_SIZE"):
            client.load_input(bytes(110592))


def test_th_load_tensor_refusing_the_size_in_a_plain_line_stops_the_run():
    dut = ReferenceDut(input_size=64)
    small = TensorSpec(INT8, (1, 40), 1.0, 0, 40)
    with connected(dut, small, VWW_OUT) as client:
        client.hello()
        with pytest.raises(DutInputMismatch, match="took 40 input elements where it expects 64 and kept its previous"):
            client.run(bytes(40))


def test_energy_mode_firmware_is_named_from_its_banner_or_its_silent_timestamp():
    for boot_first in (True, False):
        with (
            connected(ReferenceDut(energy=True), boot_first=boot_first) as client,
            pytest.raises(EnergyModeFirmware, match=r"energy-mode firmware .*EE_CFG_ENERGY_MODE 0"),
        ):
            client.hello()


def test_the_dut_model_must_be_the_cards():
    with connected(ReferenceDut(model="ic01", input_size=3072)) as client:
        client.hello()
        with pytest.raises(DutInputMismatch, match=r"runs ic01 .* card is for vww01"):
            client.expect("vww01")


def _autoencoder(tmp_path):
    from harness.model.references import TflmReference
    from harness.model.tflite_file import read_tflite
    from tests.autoencoder_model import autoencoder_model

    path = tmp_path / "ad01_test.tflite"
    path.write_bytes(autoencoder_model())
    model = read_tflite(path)
    return model, TflmReference(model)


def test_ad01_is_sent_its_float_features_and_its_printed_score_equals_the_hosts(tmp_path):
    model, reference = _autoencoder(tmp_path)
    computation = ReconstructionError(model.input, model.output)

    def network(values: np.ndarray) -> np.ndarray:  # the DUT's th_infer: the int8 model
        return np.frombuffer(reference.run(values.reshape(1, 640)), np.int8)

    dut = ReferenceDut(model="ad01", input_size=2560, network=network)
    rng = np.random.default_rng(8)
    with connected(dut, computation.input, computation.output, computation=computation) as client:
        client.hello()
        client.expect("ad01")
        for spread in (2.0, 25.0, 300.0):
            features = rng.normal(35, spread, (1, 640)).astype(np.float32)
            result = client.run(features.tobytes())
            assert bytes(dut._buffer[:2560]) == features.tobytes()  # the float32 bytes, as they are
            assert result.output == computation.result(reference.run, features)
            assert len(result.output) == 4 and np.frombuffer(result.output, np.float32)[0] > 0
    assert "db load 2560" in dut.commands and not dut.crashed


def test_an_int8_card_on_ad01_firmware_is_refused_before_any_sample(tmp_path):
    model, _ = _autoencoder(tmp_path)
    with connected(ReferenceDut(model="ad01", input_size=2560), model.input, model.output) as client:
        client.hello()
        with pytest.raises(DutInputMismatch, match=r"runs ad01, whose input is 640 float32 \(2560 bytes.*640 bytes"):
            client.expect(None)


def test_a_short_load_on_ad01_is_its_th_load_tensor_refusal(tmp_path):
    small = TensorSpec(FLOAT32, (1, 100), 0.0, 0, 400)
    dut = ReferenceDut(model="ad01", input_size=2560, network=lambda v: v)
    with connected(dut, small, TensorSpec(FLOAT32, (1,), 0.0, 0, 4)) as client:
        client.hello()
        with pytest.raises(DutInputMismatch, match="took 100 input elements where it expects 640"):
            client.run(bytes(400))
