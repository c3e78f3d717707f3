"""A board behind a TCP bridge (ser2net-style) reached with a pyserial socket:// URL."""

import importlib.util
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


@contextmanager
def tcp_bridge(pty_path: str):
    """Serve one TCP connection, copying bytes to and from the pseudo-terminal, like ser2net."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        conn, _ = server.accept()
        fd = os.open(pty_path, os.O_RDWR | os.O_NOCTTY)
        try:
            while not stop.is_set():
                ready, _, _ = select.select([conn, fd], [], [], 0.05)
                if conn in ready:
                    data = conn.recv(65536)
                    if not data:
                        return
                    os.write(fd, data)
                if fd in ready:
                    conn.sendall(os.read(fd, 65536))
        finally:
            os.close(fd)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"socket://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()
        thread.join(timeout=2)


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


def _harness(*args):
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)


@pytest.mark.skipif(importlib.util.find_spec("labgrid") is not None, reason="labgrid is installed here")
def test_labgrid_place_without_labgrid_is_a_one_line_user_error():
    done = _harness("link-test", "--board", "nucleo_h743", "--labgrid-place", "lab1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "pip install labgrid" in done.stderr


def test_labgrid_place_needs_a_real_board():
    done = _harness("link-test", "--board", "sim", "--labgrid-place", "lab1")
    assert done.returncode == 2 and "needs a real board" in done.stderr
