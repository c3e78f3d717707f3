"""What a `--protocol eembc` firmware is assembled from (harness/firmware/eembc_dut.py): the C DUT and its main
in place of harness's protocol core, and the settings the reference submission of the card's benchmark has."""

import dataclasses

import pytest

from harness.boards import get_board
from harness.firmware.assemble import Assembly, config_header
from harness.firmware.eembc_dut import EembcDutBuild
from harness.model.card import EembcDut
from harness.model.tflite_file import read_tflite
from tests.conftest import fixture_model


@pytest.fixture(scope="module")
def vww01():
    return read_tflite(fixture_model("mlperf_tiny_reference/vww_96_int8.tflite"))


def _defines(header: str) -> dict[str, str]:
    return dict(line.split(" ", 2)[1:] for line in header.splitlines() if line.startswith("#define "))


def test_a_dut_build_runs_ee_dut_in_place_of_the_protocol_core():
    board = get_board("qemu_m7")
    dut = Assembly(board, None, None, None, bare_metal=True, dut=EembcDutBuild())
    ours = Assembly(board, None, None, None, bare_metal=True)
    dut_files = {path.name for path in dut.sources}
    our_files = {path.name for path in ours.sources}
    assert {"eembc_main.c", "ee_dut.c", "ee_dut.h"} <= dut_files and "firmware_main.c" not in dut_files
    assert "firmware_main.c" in our_files and not {"eembc_main.c", "ee_dut.c"} & our_files
    assert dut.build_id(lambda _: {}) != ours.build_id(lambda _: {})


def test_the_card_settles_model_name_input_form_and_rate(vww01):
    board = get_board("qemu_m7")
    dut = EembcDutBuild.for_card(EembcDut("vww01", "uint8"))
    found = _defines(config_header(board, "id", vww01, dut=dut))
    assert found["HP_EEMBC_MODEL"] == '"vww01"' and found["HP_EEMBC_UINT8_INPUT"] == "1"
    assert found["HP_EEMBC_BUFFER_BYTES"] == "27648u" and found["HP_EEMBC_COMPUTATION"] == "0"
    assert found["HP_LINK_BAUD"] == "115200u" and found["HP_EEMBC_ENERGY_MODE"] == "0"
    assert "HP_EEMBC_TIMESTAMP_PIN" not in found  # performance mode: timestamps are m-lap-us- lines
    assert "HP_EEMBC" not in _defines(config_header(board, "id", vww01))


def test_energy_mode_is_9600_baud_with_the_boards_timestamp_pin(vww01):
    board = dataclasses.replace(
        get_board("qemu_m7"), eembc=dataclasses.replace(get_board("qemu_m7").eembc, timestamp_pin="D4")
    )
    found = _defines(config_header(board, "id", vww01, dut=EembcDutBuild(mode="energy")))
    assert found["HP_LINK_BAUD"] == "9600u" and found["HP_EEMBC_ENERGY_MODE"] == "1"
    assert found["HP_EEMBC_TIMESTAMP_PIN"] == "D4"


def test_ad01_takes_four_bytes_a_feature():
    model = read_tflite(fixture_model("mlperf_tiny_reference/ad01_int8.tflite"))
    dut = EembcDutBuild.for_card(EembcDut("ad01", "float32"), "reconstruction_mse")
    found = _defines(config_header(get_board("qemu_m7"), "id", model, dut=dut))
    assert found["HP_EEMBC_BUFFER_BYTES"] == "2560u" and found["HP_EEMBC_COMPUTATION"] == "1"
