"""A Yokogawa WT310 simulator on a TCP socket, speaking the SCPI subset harness's driver uses.

It updates its readings every `:RATE` period like the instrument: U, I and P are the means over the
last update period of a scripted PowerProfile; while integrating, WH is the exact integral since
`:INTEGrate:STARt` at the last update and TIME its duration. Its *IDN? names it a simulator, so every
figure read from it is labelled `sim`.

    python -m harness.energy.wt310_sim --port 5025 --idle-w 0.09 [--profile profile.json]
then  --meter wt310:TCPIP0::127.0.0.1::5025::SOCKET
"""

import argparse
import contextlib
import math
import re
import socketserver
import threading
import time
from pathlib import Path

from harness.energy.profile import PowerProfile
from harness.energy.wt310 import RATES

IDN = "HARNESS-SIMULATOR,WT310,SIM0001,F1.00"
NO_DATA = 9.91e37
ITEMS = {"U", "I", "P", "WH", "TIME"}

# SCPI mnemonics: the upper-case part is the short form; either form is accepted, in any case.
COMMANDS = {
    "*IDN?": "idn",
    "*RST": "reset",
    "*CLS": "clear",
    ":COMMunicate:REMote": "remote",
    ":STATus:ERRor?": "error",
    ":NUMeric:FORMat": "format",
    ":NUMeric:NORMal:NUMBer": "number",
    ":NUMeric:NORMal:ITEM": "item",
    ":NUMeric:NORMal:VALue?": "value",
    ":RATE": "rate",
    ":RATE?": "rate_query",
    ":INTEGrate:MODE": "integrate_mode",
    ":INTEGrate:STARt": "integrate_start",
    ":INTEGrate:STOP": "integrate_stop",
    ":INTEGrate:RESet": "integrate_reset",
    ":INTEGrate:STATe?": "integrate_state",
}


def _mnemonic_pattern(mnemonic: str) -> str:
    short = "".join(ch for ch in mnemonic if ch.isupper() or not ch.isalpha())
    rest = mnemonic[len(short) :].upper()
    optional = "".join(f"(?:{re.escape(ch)}" for ch in rest) + ")?" * len(rest)
    return re.escape(short) + optional


def _command_pattern(template: str) -> re.Pattern:
    if template.startswith("*"):
        return re.compile(re.escape(template), re.IGNORECASE)
    query = template.endswith("?")
    parts = template.strip(":?").split(":")
    # NORMal may be left out: it is the default group.
    body = "".join(f"(?::{_mnemonic_pattern(p)})?" if p == "NORMal" else f":{_mnemonic_pattern(p)}" for p in parts)
    if template.endswith("ITEM"):
        body += r"(\d+)"
    return re.compile(":?" + body[1:] + (r"\?" if query else ""), re.IGNORECASE)


PATTERNS = [(_command_pattern(template), name) for template, name in COMMANDS.items()]


class Wt310State:
    def __init__(self, profile: PowerProfile, epoch: float | None = None):
        self.profile = profile
        self.epoch = time.monotonic() if epoch is None else epoch  # profile time 0, on the host clock
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.rate = 0.5
        self.items = {1: "U", 2: "I", 3: "P", 4: "WH", 5: "TIME"}
        self.count = 15
        self.errors: list[str] = []
        self.integration: tuple[str, float | None, float | None] = ("RESET", None, None)  # state, start, stop

    def _last_update(self, now: float) -> float:
        """Profile time of the latest update: updates fall every `rate` seconds from the epoch."""
        elapsed = now - self.epoch
        return math.floor(elapsed / self.rate + 1e-9) * self.rate

    def values(self, now: float) -> list[float]:
        update = self._last_update(now)
        if update <= 0:
            return [NO_DATA] * self.count
        mean_watts = self.profile.energy_j(update - self.rate, update) / self.rate
        state, start, stop = self.integration
        wh = seconds = 0.0
        if start is not None:
            end = update if state == "START" else min(update, stop)
            if end > start:
                seconds = end - start
                wh = self.profile.energy_j(start, end) / 3600.0
        reading = {
            "U": self.profile.volts,
            "I": mean_watts / self.profile.volts,
            "P": mean_watts,
            "WH": wh,
            "TIME": seconds,
        }
        return [reading.get(self.items.get(n, ""), NO_DATA) for n in range(1, self.count + 1)]

    def execute(self, line: str, now: float) -> str | None:
        header, _, argument = line.strip().partition(" ")
        argument = argument.strip()
        for pattern, name in PATTERNS:
            match = pattern.fullmatch(header)
            if match:
                return getattr(self, f"_{name}")(argument, now, *match.groups())
        self.errors.append('113,"Undefined header"')
        return None

    def _idn(self, argument, now):
        return IDN

    def _reset(self, argument, now):
        self.reset()

    def _clear(self, argument, now):
        self.errors.clear()

    def _remote(self, argument, now):
        pass

    def _error(self, argument, now):
        return self.errors.pop(0) if self.errors else '0,"No error"'

    def _format(self, argument, now):
        if argument.upper() not in {"ASCII", "ASC"}:
            self.errors.append('224,"Illegal parameter value"')  # the simulator speaks ASCII only

    def _number(self, argument, now):
        try:
            self.count = max(1, min(255, int(argument)))
        except ValueError:
            self.errors.append('224,"Illegal parameter value"')

    def _item(self, argument, now, number):
        function = argument.split(",")[0].strip().upper()
        if function not in ITEMS:
            self.errors.append('224,"Illegal parameter value"')
            return
        self.items[int(number)] = function

    def _value(self, argument, now):
        return ",".join(f"{v:.5E}" for v in self.values(now))

    def _rate(self, argument, now):
        if argument.upper() not in RATES:
            self.errors.append('224,"Illegal parameter value"')
            return
        self.rate = RATES[argument.upper()]

    def _rate_query(self, argument, now):
        return next(k for k, v in RATES.items() if v == self.rate)

    def _integrate_mode(self, argument, now):
        if argument.upper() not in {"NORMAL", "NORM"}:
            self.errors.append('224,"Illegal parameter value"')

    def _integrate_start(self, argument, now):
        state, _start, _stop = self.integration
        if state == "RESET":
            self.integration = ("START", now - self.epoch, None)
        else:
            self.errors.append('813,"Integration is not reset"')  # resuming is not simulated

    def _integrate_stop(self, argument, now):
        state, start, _ = self.integration
        if state == "START":
            self.integration = ("STOP", start, now - self.epoch)

    def _integrate_reset(self, argument, now):
        self.integration = ("RESET", None, None)

    def _integrate_state(self, argument, now):
        return self.integration[0]


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        state: Wt310State = self.server.state  # type: ignore[attr-defined]
        for raw in self.rfile:
            for line in raw.decode("ascii", "replace").split(";"):
                if not line.strip():
                    continue
                with state.lock:
                    answer = state.execute(line, time.monotonic())
                if answer is not None:
                    self.wfile.write((answer + "\n").encode("ascii"))
                    self.wfile.flush()


class Wt310Simulator(socketserver.ThreadingTCPServer):
    """Serve one simulated WT310 on host:port (port 0: any free port) from a background thread."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, profile: PowerProfile, host: str = "127.0.0.1", port: int = 0, epoch: float | None = None):
        super().__init__((host, port), _Handler)
        self.state = Wt310State(profile, epoch)
        self._thread: threading.Thread | None = None

    @property
    def resource(self) -> str:
        host, port = self.server_address[:2]
        return f"TCPIP0::{host}::{port}::SOCKET"

    def __enter__(self):
        self._thread = threading.Thread(target=self.serve_forever, name="wt310-sim", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.energy.wt310_sim", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5025)
    parser.add_argument("--idle-w", type=float, default=0.09, help="constant power when there is no profile")
    parser.add_argument("--volts", type=float, default=3.3)
    parser.add_argument("--profile", type=Path, help="JSON power profile (see docs/energy.md)")
    args = parser.parse_args(argv)
    profile = PowerProfile.load(args.profile) if args.profile else PowerProfile(args.idle_w, args.volts)
    with Wt310Simulator(profile, args.host, args.port) as server:
        print(f"WT310 simulator on {server.resource}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
