"""The dealing of a sharded run (harness/eval/sharding.py) and the checks before its first sample."""

import dataclasses
import threading

import pytest

from harness.errors import UserError
from harness.eval.runner import _check_same_firmware
from harness.eval.sharding import Dealer
from harness.link.protocol import DeviceInfo, TensorSpec, TickKind


def test_samples_go_to_whoever_asks_in_order_and_each_once():
    dealer = Dealer([0, 1, 2, 3])
    assert [dealer.take("a"), dealer.take("b"), dealer.take("a")] == [0, 1, 2]
    for board, index in (("a", 0), ("b", 1), ("a", 2)):
        dealer.done(board, index)
    assert dealer.take("b") == 3 and dealer.take("a") is None
    dealer.done("b", 3)
    assert dealer.left == 0 and not dealer.more_work()


def test_a_failed_boards_unfinished_samples_come_first_again_in_their_order():
    dealer = Dealer(list(range(6)))
    taken = [dealer.take("a") for _ in range(3)]
    dealer.done("a", taken[0])
    dealer.give_back("a")  # 1 and 2 never came back
    assert dealer.left == 5
    assert [dealer.take("b") for _ in range(5)] == [1, 2, 3, 4, 5]


def test_a_board_with_nothing_to_take_waits_while_another_may_still_fail():
    dealer = Dealer([0])
    assert dealer.take("a") == 0
    answer = []
    waiter = threading.Thread(target=lambda: answer.append(dealer.more_work()))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive(), "it stopped waiting while sample 0 was still out"
    dealer.give_back("a")  # board a failed: its sample waits again, for b
    waiter.join(5)
    assert answer == [True] and dealer.take("b") == 0


def test_stopping_ends_every_wait():
    dealer = Dealer([0, 1])
    dealer.take("a")
    waiter = threading.Thread(target=dealer.more_work)
    dealer.take("a")
    waiter.start()
    dealer.stop()
    waiter.join(5)
    assert not waiter.is_alive() and dealer.take("b") is None


def _info(build_id="fw-1", model="ab" * 8) -> DeviceInfo:
    tensor = TensorSpec.__new__(TensorSpec)
    return DeviceInfo(
        protocol_version=2,
        board_id="sim",
        build_id=build_id,
        model_sha256_prefix=model,
        arena_configured=1,
        arena_used=1,
        max_request_frame=1024,
        max_response_frame=1024,
        rx_buffer_bytes=1024,
        cpu_hz=0,
        tick_hz=1_000_000,
        tick_kind=TickKind(1),
        runner_status=0,
        input=tensor,
        output=tensor,
    )


def test_boards_of_one_run_must_run_the_same_model_and_firmware():
    same = {"p1": _info(), "p2": _info()}
    assert _check_same_firmware(same) is same["p1"]
    with pytest.raises(UserError, match="board p2 runs firmware build fw-2, board p1 runs fw-1"):
        _check_same_firmware({"p1": _info(), "p2": _info(build_id="fw-2")})
    with pytest.raises(UserError, match="board p3 runs model cd"):
        _check_same_firmware(
            {"p1": _info(), "p2": _info(), "p3": dataclasses.replace(_info(), model_sha256_prefix="cd")}
        )
