"""Yokogawa WT300 series (WT310/WT310E/WT332/WT333) over VISA with pyvisa and the pure-Python pyvisa-py.

The meter integrates on its own: harness sets the numeric items to U, I, P, WH and TIME (integration
time), starts integration with the recording and polls `:NUMeric:NORMal:VALue?`. Each new update is
placed at host start + TIME, so poll jitter moves no sample, and energy comes from the meter's WH.
"""

import contextlib
import time

import numpy as np

from harness.energy.meter import PollingMeter
from harness.energy.replay import NO_DATA
from harness.energy.trace import JOULES_PER_WH
from harness.errors import LinkError, UserError
from harness.extras import require

ITEMS = ("U", "I", "P", "WH", "TIME")
RATES = {"100MS": 0.1, "250MS": 0.25, "500MS": 0.5, "1S": 1.0, "2S": 2.0, "5S": 5.0}  # :RATE -> update period, s
UPDATE_RATE = "100MS"  # the WT300 series' fastest update period
SIMULATOR_MAKER = "HARNESS-SIMULATOR"


class Wt310Meter(PollingMeter):
    kind = "wt310"

    def __init__(self, address: str, rate: str = UPDATE_RATE, timeout_ms: int = 3000):
        super().__init__()
        pyvisa = require("pyvisa", f"the {self.kind} meter")
        self._pyvisa = pyvisa
        try:
            self._manager = pyvisa.ResourceManager("@py")
            self._instrument = self._manager.open_resource(
                address, read_termination="\n", write_termination="\n", timeout=timeout_ms
            )
        except (ValueError, pyvisa.errors.Error, OSError) as exc:
            raise UserError(
                f"cannot open VISA resource {address!r} ({exc}); give e.g. wt310:USB0::0x0B21::0x0025::<serial>::INSTR "
                "or wt310:TCPIP0::<host>::<port>::SOCKET"
            ) from exc
        identity = self._query("*IDN?")
        maker, _, rest = identity.partition(",")
        if "WT3" not in rest.upper():
            self.close()
            raise UserError(f"{address} answers *IDN? with {identity!r}, not a Yokogawa WT300-series meter")
        self.description = identity
        self.source = "sim" if maker.strip().upper() == SIMULATOR_MAKER else "device"
        self.rate_seconds = RATES[rate]
        self._configure(rate)
        self._started_at = 0.0
        self._last_time = -1.0

    def _query(self, command: str) -> str:
        try:
            return self._instrument.query(command).strip()
        except self._pyvisa.errors.VisaIOError as exc:
            raise LinkError(f"WT310 did not answer {command} ({exc.description})") from exc

    def _write(self, command: str) -> None:
        try:
            self._instrument.write(command)
        except self._pyvisa.errors.VisaIOError as exc:
            raise LinkError(f"cannot send {command} to the WT310 ({exc.description})") from exc

    def _configure(self, rate: str) -> None:
        commands = [
            ":COMMunicate:REMote ON",
            ":NUMeric:FORMat ASCii",
            f":NUMeric:NORMal:NUMBer {len(ITEMS)}",
            *(f":NUMeric:NORMal:ITEM{n} {item},1" for n, item in enumerate(ITEMS, 1)),
            f":RATE {rate}",
            ":INTEGrate:MODE NORMal",
        ]
        for command in commands:
            self._write(command)
        error = self._query(":STATus:ERRor?")
        if not error.startswith("0,"):
            raise LinkError(f"the WT310 refused its setup: {error}")

    def _begin(self) -> None:
        self._write(":INTEGrate:STOP")
        self._write(":INTEGrate:RESet")
        # The meter starts when it reads the command, not when it is sent: a query answered after it brackets
        # that moment, whose middle is taken (on a loaded host the two may lie tens of ms apart).
        sent = time.monotonic()
        self._write(":INTEGrate:STARt")
        self._query(":INTEGrate:STATe?")
        self._started_at = (sent + time.monotonic()) / 2
        self._last_time = -1.0

    def _poll(self):
        time.sleep(self.rate_seconds / 4)
        fields = self._query(":NUMeric:NORMal:VALue?").split(",")
        try:
            volts, amps, watts, wh, seconds = (float(x) for x in fields[: len(ITEMS)])
        except ValueError as exc:
            raise LinkError(f"unreadable WT310 values {','.join(fields)[:80]!r}") from exc
        if max(abs(volts), abs(amps), abs(watts), abs(seconds)) >= NO_DATA or seconds <= self._last_time:
            return None  # no update since the last poll (or none yet)
        first = self._last_time < 0 and seconds > 0
        origin = [(self._started_at, volts, amps, watts, 0.0)] if first else []  # integration start: nothing yet
        self._last_time = seconds
        return np.array([*origin, (self._started_at + seconds, volts, amps, watts, wh * JOULES_PER_WH)])

    def _end(self) -> None:
        self._write(":INTEGrate:STOP")

    def close(self) -> None:
        with contextlib.suppress(LinkError):
            self._write(":COMMunicate:REMote OFF")
        self._instrument.close()
        self._manager.close()
