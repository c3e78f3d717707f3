"""RFC 2217 receive throughput through ser2net on loopback: pyserial's client, harness's
(harness/link/rfc2217_fast.py) and a raw TCP socket to the same ser2net, side by side.

A pseudo-terminal stands for the board: a thread writes to its master end as fast as it takes bytes;
ser2net (as labgrid's exporter starts it) serves the other end over RFC 2217 on a loopback port; each
client reads for a few seconds. The ratio is to a 2 Mbaud UART's 200 KB/s (10 bits a byte): under 1,
the client, not the line, would set the pace. Loopback figures: a farm's network adds its own limits.

    python benchmarks/rfc2217.py [--seconds 3] [--baud 2000000]
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import tty
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serial import rfc2217

from harness.link import rfc2217_fast

CHUNK = bytes(range(255)) * 16  # no 0xFF: every client moves the same bytes on the wire


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ser2net(path: str, port: int, baud: int) -> subprocess.Popen:
    binary = shutil.which("ser2net") or shutil.which("ser2net", path="/usr/sbin")
    if binary is None:
        sys.exit("needs ser2net (Debian ser2net)")
    yaml = [
        f"connection: &con01#  accepter: telnet(rfc2217,mode=server),tcp,{port}",
        f"  connector: serialdev(nouucplock=true),{path},{baud}n81,local",
        "  options:",
        "    max-connections: 10",
    ]
    args = [binary, "-d", "-n", *[arg for line in yaml for arg in ("-Y", line)]]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.3)  # ser2net drops a first connection it has not finished opening the device for
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("ser2net did not start")


class Feeder:
    """Writes to the pseudo-terminal's master end for as long as it runs."""

    def __init__(self, master: int):
        self.master, self.stop = master, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            try:
                os.write(self.master, CHUNK)
            except BlockingIOError:
                time.sleep(0.0005)
            except OSError:
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(2)


def drain(master: int) -> None:
    time.sleep(0.2)
    try:
        while os.read(master, 65536):
            pass
    except (BlockingIOError, OSError):
        pass


def measure(read, seconds: float, master: int) -> tuple[float, float]:
    """Bytes a second, and this process's CPU seconds (all threads, the feeder's too) per MiB."""
    with Feeder(master):
        while not read():
            pass
        got, start, cpu = 0, time.monotonic(), time.process_time()
        while (elapsed := time.monotonic() - start) < seconds:
            got += len(read())
        cpu = time.process_time() - cpu
    return got / elapsed, cpu / (got / 2**20)


def serial_client(cls, url: str, baud: int, seconds: float, master: int) -> tuple[float, float]:
    port = cls(url, baudrate=baud, timeout=0.05)
    try:
        return measure(lambda: port.read(65536), seconds, master)
    finally:
        port.close()
        drain(master)


def raw_socket(port_number: int, seconds: float, master: int) -> tuple[float, float]:
    sock = socket.create_connection(("127.0.0.1", port_number))
    sock.settimeout(0.05)

    def read():
        try:
            return sock.recv(65536)
        except TimeoutError:
            return b""

    try:
        return measure(read, seconds, master)
    finally:
        sock.close()
        drain(master)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="how long each client reads")
    parser.add_argument("--baud", type=int, default=2_000_000, help="the line rate compared with (10 bits a byte)")
    args = parser.parse_args()
    master, slave = os.openpty()
    tty.setraw(slave)
    os.set_blocking(master, False)
    port_number = free_port()
    server = ser2net(os.ttyname(slave), port_number, args.baud)
    url = f"rfc2217://127.0.0.1:{port_number}?ign_set_control"
    line = args.baud / 10
    try:
        rows = [
            ("pyserial rfc2217.Serial", serial_client(rfc2217.Serial, url, args.baud, args.seconds, master)),
            ("harness rfc2217_fast.Serial", serial_client(rfc2217_fast.Serial, url, args.baud, args.seconds, master)),
            ("raw TCP socket (no Telnet)", raw_socket(port_number, args.seconds, master)),
        ]
    finally:
        server.terminate()
        server.wait(5)
    print(
        f"device -> host through ser2net on loopback, {args.seconds:g} s each; line: {args.baud} baud = "
        f"{line / 1000:.0f} KB/s"
    )
    print(f"{'client':30} {'KiB/s':>10} {'x line rate':>12} {'CPU s/MiB':>10}")
    for name, (rate, cpu) in rows:
        print(f"{name:30} {rate / 1024:10.0f} {rate / line:12.2f} {cpu:10.3f}")


if __name__ == "__main__":
    main()
