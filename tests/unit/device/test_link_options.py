"""A real board's serial rate: the board file's, 115200 with --protocol eembc (the MLPerf Tiny reference
firmware's), or --baud; --baud on a board whose link harness opens itself is refused."""

import pytest

from harness.boards import get_board
from harness.device.launch import with_link_options
from harness.errors import UserError


def test_the_eembc_protocol_opens_a_real_board_at_the_reference_rate_unless_told():
    board = get_board("nucleo_h743")
    assert board.link.baudrate == 921600  # harness firmware's rate, from the board file
    assert with_link_options(board).link.baudrate == 921600
    assert with_link_options(board, protocol="eembc").link.baudrate == 115200
    assert with_link_options(board, protocol="eembc", baud=9600).link.baudrate == 9600
    assert with_link_options(board, baud=460800).link.baudrate == 460800
    assert with_link_options(get_board("sim"), protocol="eembc").link == get_board("sim").link


def test_baud_is_refused_where_harness_opens_the_link_and_at_a_bridge_command_rate():
    with pytest.raises(UserError, match=r"harness opens the link of sim \(virtual board\)"):
        with_link_options(get_board("sim"), baud=9600)
    with pytest.raises(UserError, match="USB bridge takes as a command"):
        with_link_options(get_board("nano33ble"), baud=1200)
