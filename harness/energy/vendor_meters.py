"""Joulescope (joulescope package) and Nordic PPK2 (ppk2-api) meters, written against their published APIs.

Neither can be exercised without the hardware: these drivers are untested here (docs/energy.md says so).
Both sample fast (Joulescope up to 2 MS/s, PPK2 100 kS/s); harness keeps block means at DECIMATED_HZ
(1 kHz), which keep the energy and bound the memory: 40 bytes a reading, 24 MB for a 600 s session.
"""

import time

import numpy as np

from harness.energy.meter import PollingMeter
from harness.errors import UserError, setting
from harness.extras import require

DECIMATED_HZ = 1_000


def _block_means(values: np.ndarray, factor: int) -> np.ndarray:
    usable = len(values) // factor * factor
    return values[:usable].reshape(-1, factor).mean(axis=1)


class Decimator:
    """Means of consecutive blocks of `factor` samples from a stream arriving in chunks of any length: the
    samples of an unfinished block wait for the next chunk, so no sample is dropped between chunks."""

    def __init__(self, factor: int):
        self.factor = factor
        self._pending = np.zeros(0)
        self.blocks_out = 0  # blocks returned so far: block n covers samples n*factor .. (n+1)*factor - 1

    def feed(self, samples: np.ndarray) -> np.ndarray:
        values = np.concatenate([self._pending, np.asarray(samples, dtype=np.float64)])
        usable = len(values) // self.factor * self.factor
        self._pending = values[usable:]
        means = values[:usable].reshape(-1, self.factor).mean(axis=1)
        self.blocks_out += len(means)
        return means


class JoulescopeMeter(PollingMeter):
    """joulescope.scan(config='auto'), open(), read(contiguous_duration=...) -> (N, 2) current, voltage."""

    kind = "joulescope"
    chunk_seconds = 0.2

    def __init__(self, address: str):
        super().__init__()
        joulescope = require("joulescope", f"the {self.kind} meter")
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
    """PPK2_API in source-meter mode: start_measuring(), get_data() / get_samples() in µA at 100 kS/s."""

    kind = "ppk2"
    sample_hz = 100_000

    def __init__(self, address: str, millivolts: int = 3300):
        super().__init__()
        module = require("ppk2_api.ppk2_api", f"the {self.kind} meter")
        if address == "auto":
            found = [d[0] if isinstance(d, tuple | list) else d for d in module.PPK2_API.list_devices()]
            if len(found) != 1:
                raise UserError(f"found {len(found)} PPK2s; name the serial port: {setting('meter')} ppk2:/dev/ttyACM0")
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
        self._decimator = Decimator(self.sample_hz // DECIMATED_HZ)
        self._started_at = 0.0

    def _begin(self) -> None:
        self._ppk2.toggle_DUT_power("ON")
        self._decimator = Decimator(self.sample_hz // DECIMATED_HZ)
        self._started_at = time.monotonic()
        self._ppk2.start_measuring()

    def _poll(self):
        raw = self._ppk2.get_data()
        if not raw:
            time.sleep(0.01)
            return None
        microamps, _digital = self._ppk2.get_samples(raw)
        first = self._decimator.blocks_out
        amps = self._decimator.feed(microamps) * 1e-6
        factor = self._decimator.factor
        t = self._started_at + (first + 0.5 + np.arange(len(amps))) * factor / self.sample_hz  # block middles
        volts = np.full_like(amps, self.volts)
        return np.column_stack([t, volts, amps, volts * amps, np.full_like(t, np.nan)])

    def _end(self) -> None:
        self._ppk2.stop_measuring()

    def close(self) -> None:
        self._ppk2.toggle_DUT_power("OFF")
