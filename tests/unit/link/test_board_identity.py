"""Identity on every connect (harness/link/session.py): a port that goes away and comes back leading to another
board (another model, another build) or to something that is not harness firmware is BoardChanged, and that
device is sent the HELLO probe and nothing else. A ser2net-like bridge sends the first TCP connection to one
board and cuts it in the middle of a sample; the connection the client opens again reaches another device."""

import os
import select
import socket
import threading
from contextlib import contextmanager

import pytest

from harness.device.sim_board import SimBoard
from harness.errors import LinkError
from harness.link.client import DeviceClient
from harness.link.framing import FrameDecoder
from harness.link.protocol import Msg
from harness.link.session import BoardChanged, BoardLost, Identity
from harness.link.transport import open_link
from tests.fake_runner import ChecksumRunner, expected_output, serving

pytestmark = pytest.mark.usefixtures("raw_inputs")  # constant and ramp inputs: the link as it carries raw bytes


SIZE = 2048
INPUTS = [bytes([i]) * SIZE for i in range(6)]


@contextmanager
def board(build_id: str = "test-build", model: list[int] | None = None):
    """The device core serving a checksum runner (HELLO says build_id and the model prefix); yields its pty."""
    runner = ChecksumRunner(SIZE, 4)
    if model is not None:
        runner.model_info.model_sha256_prefix[:] = model
    with (
        SimBoard(runner, board_id="test-board", build_id=build_id, rx_frame=524, tx_frame=524, rx_buffer=4096) as sim,
        serving(sim),
    ):
        yield sim.pty_path


@contextmanager
def swapping_bridge(first: str, then: str | None, drop_after: int):
    """TCP connections like ser2net's: the first goes to the pty `first` and is cut once `drop_after` bytes
    went towards it; every later one goes to `then` (None: a device that echoes what it is sent, as a shell's
    terminal does). Yields (url, bytes that went to `then`)."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    to_then = bytearray()

    def shuttle(conn, fd, budget, record):
        while not stop.is_set():
            ready, _, _ = select.select([conn] + ([fd] if fd is not None else []), [], [], 0.05)
            if conn in ready:
                data = conn.recv(65536)
                if not data:
                    return
                if budget is not None:
                    budget -= len(data)
                    if budget <= 0:
                        return
                if record:
                    to_then.extend(data)
                if fd is None:
                    conn.sendall(data)
                else:
                    os.write(fd, data)
            if fd is not None and fd in ready:
                conn.sendall(os.read(fd, 65536))

    def serve():
        connections = 0
        while not stop.is_set():
            server.settimeout(0.1)
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            target = first if connections == 0 else then
            fd = os.open(target, os.O_RDWR | os.O_NOCTTY) if target else None
            try:
                with conn:
                    shuttle(conn, fd, drop_after if connections == 0 else None, connections > 0)
            finally:
                if fd is not None:
                    os.close(fd)
            connections += 1

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"socket://127.0.0.1:{server.getsockname()[1]}", to_then
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()


def _requests(sent: bytes) -> list[Msg]:
    return [Msg(event.type) for event in FrameDecoder().feed(bytes(sent)) if hasattr(event, "type")]


def _client(url: str):
    link = open_link(url)
    client = DeviceClient(link, timeout=0.5, reconnect_seconds=5)
    client.hello()
    return link, client


def test_a_board_with_another_model_behind_the_port_that_came_back_gets_hello_and_nothing_else():
    with (
        board() as first,
        board(model=[9] * 8) as other,
        swapping_bridge(first, other, drop_after=7000) as (url, to_other),
    ):
        link, client = _client(url)
        results = []
        try:
            with pytest.raises(BoardChanged) as changed:
                results.extend(r.output for r in client.run_stream(INPUTS))
        finally:
            link.close()
    assert results == [expected_output(d, 4) for d in INPUTS[: len(results)]] and len(results) < len(INPUTS)
    assert changed.value.expected == Identity(
        "test-board", "test-build", client.identity.protocol_version, "0001020304050607"
    )
    assert changed.value.said.model_sha256_prefix == "09" * 8
    assert "model 0909090909090909, not 0001020304050607" in str(changed.value)
    assert set(_requests(to_other)) == {Msg.HELLO}
    assert client.stats.reconnects == 1


def test_another_firmware_build_is_another_board():
    with board() as first, board(build_id="other-build") as other, swapping_bridge(first, other, 7000) as (url, sent):
        link, client = _client(url)
        try:
            with pytest.raises(BoardChanged, match="firmware build other-build, not test-build"):
                list(client.run_stream(INPUTS))
        finally:
            link.close()
    assert set(_requests(sent)) == {Msg.HELLO}


def test_a_device_that_is_not_harness_firmware_gets_only_the_hello_probe():
    with board() as first, swapping_bridge(first, None, drop_after=7000) as (url, to_it):
        link, client = _client(url)
        client.stats.corrupt_frames += 1  # a link that showed damage: the probe still makes a clean link's tries
        try:
            with pytest.raises(BoardChanged, match="does not answer as harness firmware") as changed:
                list(client.run_stream(INPUTS))
        finally:
            link.close()
    assert changed.value.said is None
    hellos = _requests(to_it)
    assert set(hellos) == {Msg.HELLO} and len(hellos) == client.retries + 1


def test_the_same_board_coming_back_goes_on_and_a_run_that_hands_its_samples_on_is_told_at_once():
    with board() as first, board() as same, swapping_bridge(first, same, drop_after=7000) as (url, _):
        link, client = _client(url)
        client.hands_on_loss = True
        done = []
        try:
            with pytest.raises(BoardLost):
                done.extend(r.output for r in client.run_stream(INPUTS))
            assert client.stats.reconnects == 0  # not waited for in the middle of the sample
            client.reconnect(lambda: True)
            done.extend(r.output for r in client.run_stream(INPUTS[len(done) :]))
        finally:
            link.close()
    assert done == [expected_output(d, 4) for d in INPUTS] and client.stats.reconnects == 1


def test_a_port_not_wanted_any_more_is_given_up_without_waiting_its_time_out():
    with board() as first, swapping_bridge(first, None, drop_after=7000) as (url, _):
        link, client = _client(url)
        client.hands_on_loss = True
        try:
            with pytest.raises(BoardLost):
                list(client.run_stream(INPUTS))
            client.port.port = "socket://127.0.0.1:1"  # nothing listens there: the port does not come back
            asked = []

            def wanted() -> bool:
                asked.append(True)
                return False

            with pytest.raises(LinkError, match="samples were done before it came back"):
                client.reconnect(wanted)
        finally:
            link.close()
    assert len(asked) == 1
