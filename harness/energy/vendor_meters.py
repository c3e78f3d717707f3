"""Joulescope (joulescope package) and Nordic PPK2 (ppk2-api) meters, written against their published APIs.

Neither can be exercised without the hardware: these drivers are untested here (docs/energy.md says so).
Both sample fast (Joulescope up to 2 MS/s, PPK2 100 kS/s); harness keeps block means at DECIMATED_HZ,
which keep the energy and bound the memory of long runs.
"""

import time

import numpy as np

from harness.energy.meter import PollingMeter, require_package
from harness.energy.windows import Window
from harness.errors import UserError

DECIMATED_HZ = 100_000


def _block_means(values: np.ndarray, factor: int) -> np.ndarray:
    usable = len(values) // factor * factor
    return values[:usable].reshape(-1, factor).mean(axis=1)


class JoulescopeMeter(PollingMeter):
    """joulescope.scan(config='auto'), open(), read(contiguous_duration=...) -> (N, 2) current, voltage."""

    kind = "joulescope"
    chunk_seconds = 0.2

    def __init__(self, address: str):
        super().__init__()
        joulescope = require_package("joulescope", "joulescope", self.kind)
        devices = joulescope.scan(config="auto")
        if address != "auto":
            devices = [d for d in devices if address in str(d)]
        if len(devices) != 1:
            raise UserError(
                f"found {len(devices)} Joulescopes matching {address!r}; connect one or name its serial number"
            )
        self._device = devices[0]
        self._device.open()
        self._device.parameter_set("source", "on")  # stream the samples read() returns
        self._device.parameter_set("i_range", "auto")
        self.description = f"Joulescope {self._device}"

    def _sampling_hz(self) -> float:
        rate = getattr(self._device, "sampling_frequency", None)
        return float(rate if rate else self._device.parameter_get("sampling_frequency"))

    def _begin(self) -> None:
        pass

    def _poll(self):
        data = np.asarray(self._device.read(contiguous_duration=self.chunk_seconds), dtype=np.float64)
        finished = time.monotonic()
        rate = self._sampling_hz()
        factor = max(1, int(rate // DECIMATED_HZ))
        amps, volts = _block_means(data[:, 0], factor), _block_means(data[:, 1], factor)
        # read() returns contiguous samples that ended now; chunks may leave gaps between them.
        t = finished - (len(amps) - 1 - np.arange(len(amps))) * factor / rate
        return np.column_stack([t, volts, amps, volts * amps, np.full_like(t, np.nan)])

    def close(self) -> None:
        self._device.close()


class Ppk2Meter(PollingMeter):
    """PPK2_API in source-meter mode: start_measuring(), get_data() / get_samples() in µA at 100 kS/s, and
    the eight logic inputs (digital_channels), whose edges mark GPIO inference windows on the same clock."""

    kind = "ppk2"
    sample_hz = 100_000

    def __init__(self, address: str, millivolts: int = 3300):
        super().__init__()
        module = require_package("ppk2_api.ppk2_api", "ppk2-api", self.kind)
        if address == "auto":
            found = [d[0] if isinstance(d, tuple | list) else d for d in module.PPK2_API.list_devices()]
            if len(found) != 1:
                raise UserError(f"found {len(found)} PPK2s; name the serial port: --meter ppk2:/dev/ttyACM0")
            address = found[0]
        try:
            self._ppk2 = module.PPK2_API(address, timeout=1, write_timeout=1, exclusive=True)
        except Exception as exc:  # pyserial's SerialException and friends
            raise UserError(f"cannot open PPK2 at {address} ({exc}); check the port and its permissions") from exc
        self._ppk2.get_modifiers()
        self._ppk2.use_source_meter()
        self._ppk2.set_source_voltage(millivolts)
        self.volts = millivolts / 1000
        self.description = f"Nordic PPK2 on {address} (source meter {millivolts} mV)"
        self._samples_seen = 0
        self._started_at = 0.0
        self._logic: list[np.ndarray] = []

    def _begin(self) -> None:
        self._ppk2.toggle_DUT_power("ON")
        self._samples_seen = 0
        self._logic = []
        self._started_at = time.monotonic()
        self._ppk2.start_measuring()

    def _poll(self):
        raw = self._ppk2.get_data()
        if not raw:
            time.sleep(0.01)
            return None
        microamps, digital = self._ppk2.get_samples(raw)
        microamps = np.asarray(microamps, dtype=np.float64)
        self._logic.append(np.asarray(self._ppk2.digital_channels(digital)[0], dtype=np.uint8))
        factor = self.sample_hz // DECIMATED_HZ
        amps = _block_means(microamps, factor) * 1e-6
        first = self._samples_seen
        self._samples_seen += len(microamps)  # a partial last block is dropped, the clock is not
        t = self._started_at + (first + np.arange(len(amps)) * factor) / self.sample_hz
        volts = np.full_like(amps, self.volts)
        return np.column_stack([t, volts, amps, volts * amps, np.full_like(t, np.nan)])

    def _end(self) -> None:
        self._ppk2.stop_measuring()

    def gpio_windows(self) -> list[Window]:
        """High periods of logic input D0 (the firmware raises it around each inference)."""
        if not self._logic:
            return None
        level = np.concatenate(self._logic).astype(np.int8)
        edges = np.diff(level)
        rises, falls = np.flatnonzero(edges == 1) + 1, np.flatnonzero(edges == -1) + 1
        falls = falls[falls > rises[0]] if len(rises) else falls
        return [
            Window(self._started_at + r / self.sample_hz, self._started_at + f / self.sample_hz)
            for r, f in zip(rises, falls, strict=False)
        ]

    def close(self) -> None:
        self._ppk2.toggle_DUT_power("OFF")
