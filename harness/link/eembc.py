"""Host driver for the MLPerf Tiny / EEMBC DUT text protocol (`--protocol eembc`).

Commands end with `%`, answers are CRLF lines and every command ends with `m-ready`
(../docs/eembc.md). Unlike the MLPerf Tiny runner this driver checks `m-load-done` and every `e-`
line, and scales the `infer` timeout with the number of inferences asked for. The DUT reports no
model hash and no tensor layout: the host takes them from the model it was given, and the run's
manifest says they were not verified. What the protocol cannot do (operator profiles, audio streaming,
the link test's echo and PERF workload, a baud switch, recovering from a damaged link) the session's
members refuse with Unsupported, and commands refuse before they start (DeviceSession.refuse).
"""

import re
import time
from collections.abc import Iterable, Iterator
from typing import ClassVar

import numpy as np

from harness.errors import LinkError, UserError, setting
from harness.link.protocol import DeviceInfo, InvokeResult, StreamChunkResult, TickKind, Timing
from harness.link.session import DeviceSession
from harness.tensors import TensorSpec

CHUNK_BYTES = 31  # the MLPerf Tiny runner's: `db ` + 62 hex digits + `%` stays under the 80-char buffer
READY = "m-ready"
US_WRAP = 1 << 32  # the DUT's m-lap-us counter is 32 bits wide


class EembcError(LinkError):
    """The DUT answered with an e- line."""


NO_MODEL = f"{setting('protocol')} eembc needs a model: the DUT reports no tensor layout, the model gives it"
NO_STREAMING = "the DUT protocol has no audio streaming; `harness stream` needs harness firmware"


class EembcClient(DeviceSession):
    protocol = "eembc"
    UNSUPPORTED: ClassVar[dict[str, str]] = {
        "profile": "the DUT protocol times whole inferences, not operators; `harness profile` needs harness firmware",
        "stream_start": NO_STREAMING,
        "stream_audio": NO_STREAMING,
        "echo": "the DUT protocol has no echo request; `harness link-test` needs harness firmware",
        "perf": "the DUT protocol has no fixed PERF workload; `harness link-test` needs harness firmware",
        "switch_baud": f"the DUT protocol cannot switch the baud rate; leave {setting('switch_baud')} off",
        "faults": (
            "the DUT protocol has no resends, so a damaged byte ends the run; "
            f"{setting('faults')} needs harness firmware"
        ),
    }

    NEEDS_MODEL = True

    def __init__(
        self,
        port,
        input_spec: TensorSpec,
        output_spec: TensorSpec,
        *,
        timeout: float = 5.0,
        infer_timeout: float = 30.0,
        chunk_bytes: int = CHUNK_BYTES,
    ):
        super().__init__(port)
        self.input_spec, self.output_spec = input_spec, output_spec
        self.timeout = timeout
        self.infer_timeout = infer_timeout
        self.chunk_bytes = chunk_bytes
        self._pending = b""
        self._slowest_inference = 0.0
        self._arrivals: list[float] = []  # host monotonic time each line of the last command was read

    @classmethod
    def over(cls, port, model=None, switch_baudrate: int = 0) -> "EembcClient":
        """`name` and `profile`; the tensor layout is the model's, since the DUT reports none."""
        if model is None:
            raise UserError(NO_MODEL)
        if switch_baudrate:
            cls.refuse("switch_baud")
        client = cls(port, model.input, model.output)
        client.hello()
        return client

    def hello(self) -> DeviceInfo:
        """`name` and `profile`, after a bare `%` that ends whatever the DUT half-received."""
        self.port.reset_input_buffer()
        self._pending = b""
        self.command("", tolerate_errors=True)
        name = _field(self.command("name"), "m-name-dut-")
        model = _field(self.command("profile"), "m-model-")
        # Protocol version 0 and no model hash: nothing here is reported by the DUT but its name and model.
        self.info = DeviceInfo(
            0,
            name,
            f"eembc:{model}",
            "",
            None,  # arena configured and used: not reported
            None,
            0,
            0,
            0,
            0,
            1_000_000,
            TickKind.WALL_CLOCK,
            0,
            self.input_spec,
            self.output_spec,
        )
        self.stats.baud = getattr(self.port, "baudrate", 0)
        return self.info

    def load_input(self, data: bytes) -> None:
        if len(data) != self.input_spec.bytes:
            raise LinkError(f"input is {len(data)} bytes, the model expects {self.input_spec.bytes}")
        expecting = self.command(f"db load {len(data)}")
        if f"m-[Expecting {len(data)} bytes]" not in expecting:
            raise LinkError(f"the DUT did not accept `db load {len(data)}`: {expecting}")
        for offset in range(0, len(data), self.chunk_bytes):
            piece = data[offset : offset + self.chunk_bytes]
            lines = self.command("db " + piece.hex())
            last = offset + len(piece) == len(data)
            if ("m-load-done" in lines) != last:
                where = "after the last byte" if last else f"at byte {offset + len(piece)} of {len(data)}"
                raise LinkError(f"the DUT's m-load-done came wrong {where}: the load is incomplete or overran")

    def invoke(self, count: int = 1, warmups: int = 0) -> InvokeResult:
        """`infer count warmups`: the mean time of `count` inferences. last_invoke spans the command;
        last_device_window is the DUT's own time of them, ending when its closing m-lap-us line arrived."""
        started = time.monotonic()
        lines = self.command(f"infer {count} {warmups}", timeout=self._infer_wait(count + warmups))
        answered = time.monotonic()
        self._slowest_inference = max(self._slowest_inference, (answered - started) / (count + warmups))
        try:
            laps = [(int(x.removeprefix("m-lap-us-")), i) for i, x in enumerate(lines) if x.startswith("m-lap-us-")]
        except ValueError:
            raise LinkError(f"`infer` answered a timestamp that is not a number: {lines}") from None
        if len(laps) != 2 or "m-infer-done" not in lines:
            raise LinkError(f"`infer {count} {warmups}` answered without two timestamps and m-infer-done: {lines}")
        total_us = (laps[1][0] - laps[0][0]) % US_WRAP
        results = [line for line in lines if line.startswith("m-results-[")]
        if not results:
            raise LinkError("`infer` answered without m-results")
        self.last_invoke = (started, answered)
        marker = self._arrivals[laps[1][1]]
        self.last_device_window = (marker - total_us / 1e6, marker)
        timing = Timing(round(total_us / count), 1_000_000, TickKind.WALL_CLOCK)
        return InvokeResult(timing, self._output_bytes(results[-1]))

    def run(self, data: bytes) -> InvokeResult:
        self.load_input(data)
        return self.invoke()

    def run_stream(self, inputs: Iterable[bytes]) -> Iterator[InvokeResult]:
        """One at a time: the EEMBC protocol has no way to send an input while the DUT infers."""
        for data in inputs:
            yield self.run(data)

    def bench(self, data: bytes, runs: int, warmups: int = 0) -> list[Timing]:
        """The input loaded once, then one `infer 1 W` per run (the warm-ups before the first): each run
        timed on its own, as MLPerf Tiny's performance mode times `infer N W` as a whole."""
        self.load_input(data)
        return [self.invoke(1, warmups if not i else 0).timing for i in range(runs)]

    def profile(self, data: bytes) -> tuple[Timing, list[tuple[str, Timing]], int]:
        self._unsupported("profile")

    def stream_start(self, config: bytes) -> int:
        self._unsupported("stream_start")

    def stream_audio(self, samples: bytes) -> StreamChunkResult:
        self._unsupported("stream_audio")

    def echo(self, payload: bytes) -> bytes:
        self._unsupported("echo")

    def perf(self, iterations: int) -> tuple[Timing, int]:
        self._unsupported("perf")

    def switch_baud(self, baud: int) -> bool:
        self._unsupported("switch_baud")

    def command(self, text: str, timeout: float | None = None, tolerate_errors: bool = False) -> list[str]:
        """Send `text%` and return the lines up to m-ready. An e- line raises EembcError."""
        wire = (text + "%").encode()
        self.port.write(wire)
        self.stats.frames_sent += 1
        wait = (timeout or self.timeout) + len(wire) * 10 / (getattr(self.port, "baudrate", 0) or 115200)
        deadline = time.monotonic() + wait
        lines: list[str] = []
        self._arrivals = []
        while time.monotonic() < deadline:
            line = self._line()
            if line is None:
                continue
            if line == READY:
                errors = [x for x in lines if x.startswith("e-")]
                if errors and not tolerate_errors:
                    raise EembcError(f"the DUT refused `{text[:40]}`: {errors[0]}")
                return lines
            lines.append(line)
            self._arrivals.append(time.monotonic())
        raise LinkError(
            f"no m-ready after `{text[:40]}%` within {wait:.1f} s; check the port, the baud rate and that "
            "the board runs MLPerf Tiny firmware"
        )

    def _line(self) -> str | None:
        while b"\n" not in self._pending:
            data = self.port.read(max(1, self.port.in_waiting))
            if not data:
                return None
            self._pending += data
        raw, self._pending = self._pending.split(b"\n", 1)
        return raw.strip(b"\r").decode("ascii", "replace").strip() or None

    def _infer_wait(self, inferences: int) -> float:
        """Per inference, the configured bound until one was seen, then 5x the slowest seen."""
        per = min(self.infer_timeout, 5 * self._slowest_inference) if self._slowest_inference else self.infer_timeout
        return self.timeout + inferences * per

    def _output_bytes(self, line: str) -> bytes:
        """The dequantized floats back to the output tensor's bytes (exact for 8-bit outputs)."""
        try:
            values = [float(v) for v in line.removeprefix("m-results-[").rstrip("]").split(",") if v.strip()]
        except ValueError:
            raise LinkError(f"m-results holds something other than numbers: {line[:80]}") from None
        spec = self.output_spec
        count = spec.bytes // spec.numpy_dtype.itemsize
        if len(values) != count:
            raise LinkError(f"m-results has {len(values)} values, the model's output has {count}")
        if not spec.is_quantized:
            return np.asarray(values, dtype=spec.numpy_dtype).tobytes()
        info = np.iinfo(spec.numpy_dtype)
        q = np.rint(np.asarray(values) / spec.scale + spec.zero_point)
        return np.clip(q, info.min, info.max).astype(spec.numpy_dtype).tobytes()


def _field(lines: list[str], prefix: str) -> str:
    for line in lines:
        match = re.fullmatch(re.escape(prefix) + r"\[(.*)\]", line)
        if match:
            return match.group(1)
    raise LinkError(f"the DUT's answer has no {prefix}[…] line: {lines}")
