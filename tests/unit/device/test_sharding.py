"""The dealing of a sharded run (harness/device/sharding.py) and the checks before its first sample."""

import dataclasses
import threading
from contextlib import contextmanager

import numpy as np
import pytest

from harness.device.fleet import FleetMember
from harness.device.sharding import Dealer, ShardedStream
from harness.errors import LinkError, UserError
from harness.eval.run_manifest import check_same_firmware
from harness.link.protocol import DeviceInfo, InvokeResult, TensorSpec, TickKind, Timing
from harness.link.session import BoardChanged, BoardLost, Identity, LinkStats


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
    assert check_same_firmware(same) is same["p1"]
    with pytest.raises(UserError, match="board p2 runs firmware build fw-2, board p1 runs fw-1"):
        check_same_firmware({"p1": _info(), "p2": _info(build_id="fw-2")})
    with pytest.raises(UserError, match="board p3 runs model cd"):
        check_same_firmware(
            {"p1": _info(), "p2": _info(), "p3": dataclasses.replace(_info(), model_sha256_prefix="cd")}
        )


# --- a board lost mid-run: its sample is handed on when the loss is declared, not once the board is given up on


class _Session:
    """A board session as ShardedStream uses one: inputs are one byte, the sample's index; a result's output
    is that byte. `loses`: the port goes away as the board is sent its first sample (BoardLost, the sample
    noted in `lost`); `reconnect` calls `back` (which decides how the board comes back, or raises).
    `after`: an event the board waits for before it takes its first sample."""

    def __init__(self, name: str, log: list, loses: bool = False, back=None, after: threading.Event | None = None):
        self.name, self.log, self.loses, self.back, self.after = name, log, loses, back, after
        self.lost = threading.Event()
        self.lost_index: int | None = None
        self.info = _info()
        self.firmware = self.last_invoke = self.last_device_window = None
        self.port = object()
        self.stats = LinkStats()
        self.hands_on_loss = False

    def run_stream(self, inputs):
        if self.after is not None:
            assert self.after.wait(30), "the other board never lost its sample"
        for data in inputs:
            index = data[0]
            if self.loses and self.hands_on_loss:
                self.loses = False
                self.lost_index = index
                self.log.append((self.name, "lost", index))
                self.lost.set()
                raise BoardLost(OSError("gone"))
            self.log.append((self.name, "ran", index))
            yield InvokeResult(Timing(1, 1_000_000, TickKind(1)), data)

    def reconnect(self, wanted) -> None:
        self.log.append((self.name, "reconnecting", None))
        self.back(wanted)
        self.log.append((self.name, "back", None))


class _Driver:
    share = None  # the device computes the model's tensors: what it is sent is the sample's tensor

    def __init__(self, session: _Session):
        self._session = session

    @contextmanager
    def session(self):
        yield self._session


def _run(*sessions: _Session, samples: int = 4):
    tensors = [np.array([i], dtype=np.uint8) for i in range(samples)]
    members = [FleetMember(s.name, _Driver(s)) for s in sessions]
    with ShardedStream(members, tensors, list(range(samples))) as shards:
        shards.ready()
        shards.go()
        arrivals = sorted((a.index, a.board) for a in shards.arrivals())
    return arrivals, shards.ends


def _pair(back, log: list | None = None) -> tuple[_Session, _Session]:
    """Board a loses its first sample; board b starts once it has."""
    log = [] if log is None else log
    lost = _Session("a", log, loses=True, back=back)
    return lost, _Session("b", log, after=lost.lost)


def test_a_lost_boards_sample_goes_to_another_board_while_the_lost_one_is_still_waited_for():
    log: list = []

    def comes_back_once_its_sample_ran_elsewhere(wanted):
        # Event ordering, not time: this board is still being waited for when the other runs its sample (the
        # bound only keeps a broken hand-over from hanging the test).
        for _ in range(3000):
            if ("b", "ran", lost.lost_index) in log:
                return
            threading.Event().wait(0.01)
        raise AssertionError("the lost sample was not handed on while its board was waited for")

    lost, other = _pair(comes_back_once_its_sample_ran_elsewhere, log)
    arrivals, ends = _run(lost, other)
    assert [index for index, _ in arrivals] == [0, 1, 2, 3]  # each sample once
    assert dict(arrivals)[lost.lost_index] == "b"
    sample = lost.lost_index
    events = [entry for entry in log if entry[0] == "a" or entry == ("b", "ran", sample)]
    assert events[:4] == [("a", "lost", sample), ("a", "reconnecting", None), ("b", "ran", sample), ("a", "back", None)]
    assert ends["a"].failure is None and ends["a"].retired is None


def test_one_board_lost_and_back_runs_its_sample_again_itself():
    log: list = []
    arrivals, ends = _run(_Session("a", log, loses=True, back=lambda wanted: None))
    assert arrivals == [(0, "a"), (1, "a"), (2, "a"), (3, "a")]
    assert log[:4] == [("a", "lost", 0), ("a", "reconnecting", None), ("a", "back", None), ("a", "ran", 0)]
    assert ends["a"].samples == 4 and ends["a"].failure is None


def test_a_board_that_comes_back_as_another_is_retired_and_its_samples_run_on_the_others():
    expected = Identity("sim", "fw-1", 2, "ab" * 8)
    said = Identity("sim", "fw-1", 2, "cd" * 8)

    def another_board(wanted):
        raise BoardChanged(expected, said)

    lost, other = _pair(another_board)
    arrivals, ends = _run(lost, other)
    assert arrivals == [(0, "b"), (1, "b"), (2, "b"), (3, "b")]
    assert ends["a"].retired == (expected, said)
    assert "model cdcdcdcdcdcdcdcd, not abababababababab" in ends["a"].failure
    assert ends["b"].failure is None and ends["b"].retired is None


def test_with_no_board_left_the_retirement_fails_the_run():
    def not_harness_firmware(wanted):
        raise BoardChanged(Identity("sim", "fw-1", 2, "ab" * 8), None, "no valid answer to HELLO")

    with pytest.raises(BoardChanged, match="does not answer as harness firmware"):
        _run(_Session("a", [], loses=True, back=not_harness_firmware))


def test_a_lost_board_is_no_longer_wanted_once_the_others_ran_every_sample():
    def waits_while_wanted(wanted):
        for _ in range(3000):  # a bound that only keeps a board wanted for ever from hanging the test
            if not wanted():
                raise LinkError("the port went away; the run's samples were done before it came back")
            threading.Event().wait(0.01)
        raise AssertionError("still wanted with every sample run")

    lost, other = _pair(waits_while_wanted)
    arrivals, ends = _run(lost, other)
    assert arrivals == [(0, "b"), (1, "b"), (2, "b"), (3, "b")]
    assert "done before it came back" in ends["a"].failure
