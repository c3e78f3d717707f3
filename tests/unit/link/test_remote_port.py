"""A board behind a TCP bridge (ser2net-style) reached with a pyserial socket:// URL."""

import os
import select
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

from harness.link.client import DeviceClient
from harness.link.transport import open_link
from tests.fake_runner import ChecksumRunner, core_on_pty, expected_output
from tests.forked_cli import run_harness_command


@contextmanager
def tcp_bridge(pty_path: str, drop_after: int | None = None):
    """Serve TCP connections one after another, copying bytes to and from the pseudo-terminal, like
    ser2net. drop_after: cut the first connection once that many bytes went towards the board."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def shuttle(conn, fd, budget):
        while not stop.is_set():
            ready, _, _ = select.select([conn, fd], [], [], 0.05)
            if conn in ready:
                data = conn.recv(65536)
                if not data:
                    return
                if budget is not None:
                    budget -= len(data)
                    if budget <= 0:
                        return  # the link goes away in the middle of a sample
                os.write(fd, data)
            if fd in ready:
                conn.sendall(os.read(fd, 65536))

    def serve():
        fd = os.open(pty_path, os.O_RDWR | os.O_NOCTTY)
        budget = drop_after
        try:
            while not stop.is_set():
                server.settimeout(0.1)
                try:
                    conn, _ = server.accept()
                except (TimeoutError, OSError):
                    continue
                with conn:
                    shuttle(conn, fd, budget)
                budget = None
        finally:
            os.close(fd)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"socket://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()


def test_board_behind_a_socket_url_runs_like_a_local_one():
    data = bytes(range(256)) * 8
    with core_on_pty(ChecksumRunner(len(data), 4)) as (local, _), tcp_bridge(local.port) as url:
        link = open_link(url)
        try:
            client = DeviceClient(link)
            assert client.hello().board_id == "test-board"
            results = [r.output for r in client.run_stream([data, data[::-1]])]
        finally:
            link.close()
    assert results == [expected_output(data, 4), expected_output(data[::-1], 4)]


@pytest.mark.usefixtures("raw_inputs")  # the port drops after 7000 bytes: mid-run only for raw inputs
def test_a_port_that_goes_away_and_comes_back_is_waited_for_and_the_sample_rerun():
    data = [bytes([i]) * 2048 for i in range(6)]
    with core_on_pty(ChecksumRunner(2048, 4)) as (local, _), tcp_bridge(local.port, drop_after=7000) as url:
        link = open_link(url)
        try:
            client = DeviceClient(link, timeout=0.5, reconnect_seconds=5)
            client.hello()
            results = [r.output for r in client.run_stream(data)]
        finally:
            link.close()
    assert results == [expected_output(d, 4) for d in data]
    assert client.stats.reconnects == 1


def _harness(*args):
    return run_harness_command([*args])


def test_labgrid_place_without_labgrid_is_a_one_line_user_error(tmp_path):
    # labgrid is a test prerequisite: a package of that name that fails to import stands for its absence.
    (tmp_path / "labgrid").mkdir()
    (tmp_path / "labgrid" / "__init__.py").write_text("raise ImportError('no labgrid here')\n")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    command = [
        sys.executable,
        "-m",
        "harness",
        "boards",
        "link-test",
        "--board",
        "nucleo_h743",
        "--labgrid-place",
        "lab1",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "pip install 'harness[farm]'" in done.stderr


def test_labgrid_place_needs_a_real_board():
    done = _harness("boards", "link-test", "--board", "sim", "--labgrid-place", "lab1")
    assert done.returncode == 2 and "needs a real board" in done.stderr


def test_a_transport_of_ones_own_is_a_pyserial_url_handler(tmp_path, monkeypatch):
    """HARNESS_URL_HANDLERS adds a package whose protocol_<scheme> module pyserial finds by the URL's scheme."""
    from harness.link.transport import open_link

    package = tmp_path / "lab_transports"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "protocol_benchloop.py").write_text(
        "from serial.urlhandler.protocol_loop import Serial as _Loop\n\n\n"
        "class Serial(_Loop):\n"
        "    def from_url(self, url):\n"
        "        return super().from_url(url.replace('benchloop://', 'loop://', 1))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HARNESS_URL_HANDLERS", "lab_transports")
    link = open_link("benchloop://", 921600)
    try:
        link.write(b"HELLO")
        assert link.read(5) == b"HELLO" and link.baudrate == 921600
        assert type(link).__module__ == "lab_transports.protocol_benchloop"
    finally:
        link.close()
