"""A fault-injection proxy between host and device: a pseudo-terminal in the middle that drops,
damages and duplicates bytes in both directions and resets the device every so many requests.

    harness link-test --faults drop=1e-3,corrupt=1e-3,dup=1e-4,reset-every=200
    harness eval ... --faults drop=1e-3,corrupt=1e-3,reset-every=200

Rates are per byte. reset-every=N resets the device once every N samples, in the middle of sending
the next one (counted by INVOKE frames; the virtual board only: it loses all state and sends its
boot notice, as after a watchdog reset).
"""

import contextlib
import os
import select
import threading
import tty
from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import UserError, setting
from harness.link.framing import SYNC

CLOSED_END_BACKOFF = 0.05  # seconds between looks at an end that has closed (it may open again)

INVOKE_HEADER = SYNC + b"\x03"  # sync and the INVOKE type: one per sample
KNOWN = ("drop", "corrupt", "dup", "reset-every")


@dataclass(frozen=True)
class FaultSpec:
    drop: float = 0.0
    corrupt: float = 0.0
    dup: float = 0.0
    reset_every: int = 0

    @classmethod
    def parse(cls, text: str) -> "FaultSpec":
        """`name=value` pairs, each name once: rates per byte are finite and below 0.5, reset-every a whole
        number of samples up to MAX_RESET_EVERY."""
        values: dict = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, _, value = item.partition("=")
            if name not in KNOWN or not value:
                raise UserError(f"{setting('faults')} {text!r}: use name=value pairs among {', '.join(KNOWN)}")
            key = name.replace("-", "_")
            if key in values:
                raise UserError(f"{setting('faults')} {text!r}: {name} is given twice; give each once")
            values[key] = _fault_value(name, value)
        return cls(**values)


def fault_spec(text: str) -> FaultSpec:
    """`--faults`' argparse type (harness/values.py's types sit below the link: this one stays with its spec)."""
    import argparse

    try:
        return FaultSpec.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(exc.worded_for_cli()) from None


MAX_RESET_EVERY = (1 << 32) - 1


def _fault_value(name: str, value: str) -> float | int:
    """One pair's value, in ASCII digits (no NaN, no infinity, no Unicode digits), in its range."""
    from harness.digits import ascii_float, ascii_int

    try:
        number = ascii_int(value) if name == "reset-every" else ascii_float(value)
    except ValueError:
        raise UserError(f"{setting('faults')}: {name}={value} is not a number") from None
    if name == "reset-every" and not 0 <= number <= MAX_RESET_EVERY:
        raise UserError(f"{setting('faults')}: {name}={value} is out of range (0 to {MAX_RESET_EVERY} samples)")
    if name != "reset-every" and not 0 <= number < 0.5:
        raise UserError(f"{setting('faults')}: {name}={value} is out of range (rates are per byte, below 0.5)")
    return number


class FaultProxy:
    """Serves a fresh pseudo-terminal (`path`, for the host) and relays it to `device` (a pyserial
    port), damaging bytes on the way. `reset` is called every spec.reset_every host frames."""

    def __init__(self, device, spec: FaultSpec, reset: Callable[[], None] | None = None, seed: int = 0):
        if spec.reset_every and reset is None:
            raise UserError(
                f"{setting('faults')} reset-every needs a board harness can reset: use {setting('board')} sim"
            )
        if device is not None and not hasattr(device, "fileno"):
            raise UserError(f"{setting('faults')} needs a local serial port or the virtual board, not a network URL")
        self.spec = spec
        # A plain dict, updated as bytes pass, so a client's link statistics can hold it as it grows.
        self.counts = dict.fromkeys(("dropped", "corrupted", "duplicated", "resets", "to_device", "to_host"), 0)
        self._device, self._reset = device, reset
        import numpy as np  # here, not above: FaultSpec is what --faults parses, and parsing stays light

        self._rng = np.random.default_rng(seed)
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self._invokes = 0
        self._reset_due = False
        self._tail = b""  # the last bytes seen towards the device, for a header split across reads
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._relay, daemon=True)

    @property
    def path(self) -> str:
        return os.ttyname(self._slave)

    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)

    def damage(self, data: bytes) -> bytes:
        """The bytes after this hop: some dropped, some with a bit flipped, some twice."""
        import numpy as np

        if not data:
            return data
        n = len(data)
        arr = np.frombuffer(data, np.uint8).copy()
        corrupt = self._rng.random(n) < self.spec.corrupt
        arr[corrupt] ^= (1 << self._rng.integers(0, 8, int(corrupt.sum()))).astype(np.uint8)
        repeats = np.ones(n, dtype=np.int64)
        drop = self._rng.random(n) < self.spec.drop
        dup = (self._rng.random(n) < self.spec.dup) & ~drop
        repeats[drop] = 0
        repeats[dup] = 2
        self.counts["corrupted"] += int(corrupt.sum())
        self.counts["dropped"] += int(drop.sum())
        self.counts["duplicated"] += int(dup.sum())
        return np.repeat(arr, repeats).tobytes()

    def _to_device(self, data: bytes) -> bytes:
        """The bytes to queue towards the device; resets the device when a reset is due."""
        self.counts["to_device"] += len(data)
        if not self.spec.reset_every:
            return self.damage(data)
        sent = b""
        if self._reset_due:  # the sample after the N-th: the device resets while it arrives
            half = len(data) // 2
            sent, data = self.damage(data[:half]), data[half:]
            self._reset()
            self.counts["resets"] += 1
            self._reset_due = False
        seen = (self._tail + data).count(INVOKE_HEADER)
        self._tail = data[-2:]
        self._reset_due = self._invokes // self.spec.reset_every != (self._invokes + seen) // self.spec.reset_every
        self._invokes += seen
        return sent + self.damage(data)

    def _relay(self) -> None:
        """Both directions through non-blocking descriptors and queues: neither side can stall the other."""
        device_fd = self._device.fileno()
        os.set_blocking(device_fd, False)
        os.set_blocking(self._master, False)
        to_device, to_host = bytearray(), bytearray()
        while not self._stop.is_set():
            writers = [fd for fd, queue in ((device_fd, to_device), (self._master, to_host)) if queue]
            ready, writable, _ = select.select([self._master, device_fd], writers, [], 0.05)
            broken = False  # an end that closed stays readable and fails every call: don't spin on it
            if self._master in ready:
                data = _read(self._master)
                broken |= data is None
                to_device += self._to_device(data or b"")
            if device_fd in ready:
                data = _read(device_fd)
                broken |= data is None
                self.counts["to_host"] += len(data or b"")
                to_host += self.damage(data or b"")
            if device_fd in writable:
                sent = _write(device_fd, to_device)
                broken |= sent is None
                del to_device[: len(to_device) if sent is None else sent]  # undeliverable: lost, as on a cut line
            if self._master in writable:
                sent = _write(self._master, to_host)
                broken |= sent is None
                del to_host[: len(to_host) if sent is None else sent]
            if broken:
                self._stop.wait(CLOSED_END_BACKOFF)


def _read(fd: int) -> bytes | None:
    """What a ready descriptor holds; None once its other side has closed (EIO, end of file)."""
    try:
        return os.read(fd, 65536) or None
    except (BlockingIOError, InterruptedError):
        return b""
    except OSError:  # EIO: a pty with no one on the other side, a board gone
        return None


def _write(fd: int, data: bytearray) -> int | None:
    """Bytes written; None once the other side has closed (the relay carries on, it never dies)."""
    try:
        return os.write(fd, data)
    except (BlockingIOError, InterruptedError):
        return 0
    except OSError:
        return None
