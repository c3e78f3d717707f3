"""Host driver for the MLPerf Tiny / EEMBC DUT text protocol (`--protocol eembc`).

Commands end with `%`, answers are CRLF lines and every command ends with `m-ready`
(../docs/eembc.md). Unlike the MLPerf Tiny runner this driver checks `m-load-done` and every `e-`
line, and scales the `infer` timeout with the number of inferences asked for. The DUT reports no
model hash and no tensor layout: the host takes them from the model it was given, and the run's
manifest says they were not verified. What the protocol cannot do (operator profiles, audio streaming,
the link test's echo and PERF workload, a baud switch, recovering from a damaged link) are roles this session
does not have (harness/link/roles.py): a command that needs one is refused before it starts, for LACKS' reason.

Checked against mlcommons/tiny at UPSTREAM_COMMIT (benchmark/api/internally_implemented.cpp and the reference
submissions' th_load_tensor, th_results and th_timestamp): nothing sent is a command the reference parser
cannot take (a bare `%` gives strtok's NULL to strncmp), and the reference's refusals that are plain lines
without `e-` (a `db load` over MAX_DB_INPUT_SIZE, th_load_tensor's size mismatch) stop the run.
"""

import re
import time
from collections.abc import Iterable, Iterator
from typing import ClassVar

import numpy as np

from harness.errors import LinkError, UserError, setting
from harness.link.protocol import DeviceInfo, InvokeResult, TickKind, Timing
from harness.link.roles import (
    BaudSwitching,
    KeywordStreaming,
    LayerTracing,
    LinkTesting,
    Profiling,
    Recovery,
    refuse,
)
from harness.link.session import DeviceSession, Span
from harness.model.card import REFERENCE_INPUTS
from harness.model.dut import DutComputation, ModelOutputs, ReconstructionError, as_computation
from harness.tensors import TensorSpec

UPSTREAM_COMMIT = "1afd2c9820f795965a6134facd0b4dfae41ef23f"  # mlcommons/tiny, what this driver was checked against
CHUNK_BYTES = 31  # the MLPerf Tiny runner's: `db ` + 62 hex digits + `%` stays under the 80-char buffer
READY = "m-ready"
US_WRAP = 1 << 32  # the DUT's m-lap-us counter is 32 bits wide
REFERENCE_BAUD = 115200  # the reference firmware's th_serialport_initialize (9600 in energy mode)
ENERGY_BANNER = "m-timestamp-mode-energy"  # th_timestamp_initialize's line when EE_CFG_ENERGY_MODE is 1
# The reference firmware's refusals that are plain lines, without `e-` (internally_implemented.cpp's
# ee_buffer_parse; every reference submission's th_load_tensor, which then keeps its previous input).
OVER_MAXIMUM = re.compile(r"Supplied buffer size (\d+) exceeds maximum of (\d+)")
WRONG_SIZE = re.compile(r"Input db has (\d+) element\w*, expected (\d+)")
ENERGY_MODE = (
    "the DUT runs MLPerf Tiny energy-mode firmware (EE_CFG_ENERGY_MODE 1: it marks each timestamp with a "
    "GPIO pulse for an energy monitor and prints no m-lap-us- lines); harness times inferences by those "
    "lines: flash the performance-mode build (EE_CFG_ENERGY_MODE 0, 115200 baud) and measure energy with "
    f"{setting('meter')} (docs/energy.md)"
)


class EembcError(LinkError):
    """The DUT answered with an e- line."""


class DutInputMismatch(UserError):
    """The DUT's firmware takes another input than the one the model card gives (a plain-line refusal)."""


class EnergyModeFirmware(UserError):
    """The DUT runs the reference's energy-mode build: no timestamps on the serial line."""


class PerformanceModeFirmware(UserError):
    """An energy-mode build was expected and the DUT prints its timestamps."""


NO_MODEL = f"{setting('protocol')} eembc needs a model: the DUT reports no tensor layout, the model gives it"


class EembcClient(DeviceSession):
    protocol = "eembc"
    FIRMWARE_BAUD = REFERENCE_BAUD
    DUT_FIRMWARE = True
    LACKS: ClassVar[dict[type, str]] = {
        Profiling: "the DUT protocol times whole inferences, not operators; `harness profile` needs harness firmware",
        LayerTracing: "the DUT protocol reports whole inferences, not layers; a layer trace needs harness firmware",
        KeywordStreaming: "the DUT protocol has no audio streaming; `harness stream run` needs harness firmware",
        LinkTesting: (
            "the DUT protocol has no echo request nor fixed PERF workload; `harness boards link-test` needs "
            "harness firmware"
        ),
        BaudSwitching: f"the DUT protocol cannot switch the baud rate; leave {setting('switch_baud')} off",
        Recovery: (
            "the DUT protocol has no resends, so a damaged byte ends the run; "
            f"{setting('faults')} needs harness firmware"
        ),
    }

    NEEDS_MODEL = True
    COMPUTES = (ModelOutputs.kind, ReconstructionError.kind)  # the reference AD DUT prints its anomaly score

    def __init__(
        self,
        port,
        input_spec: TensorSpec,
        output_spec: TensorSpec,
        *,
        computation: DutComputation | None = None,
        timeout: float = 5.0,
        infer_timeout: float = 30.0,
        chunk_bytes: int = CHUNK_BYTES,
    ):
        super().__init__(port)
        self.input_spec, self.output_spec = input_spec, output_spec
        # How m-results becomes the output: the model's tensor, or the DUT's own score (harness/model/dut.py).
        self.computation = computation or ModelOutputs(input_spec, output_spec)
        self.timeout = timeout
        self.infer_timeout = infer_timeout
        self.chunk_bytes = chunk_bytes
        self._pending = b""
        self._slowest_inference = 0.0
        self._arrivals: list[float] = []  # host monotonic time each line of the last command was read
        self.uint8_input = False  # the DUT takes the int8 input as uint8 (v + 128): see expect()

    @classmethod
    def over(cls, port, model=None, switch_baudrate: int = 0) -> "EembcClient":
        """`name` and `profile`; the tensor layout is the model's (or what its DUT computes), since the DUT
        reports none."""
        if model is None:
            raise UserError(NO_MODEL)
        if switch_baudrate:
            refuse(cls, BaudSwitching)
        computation = as_computation(model)
        client = cls(port, computation.input, computation.output, computation=computation)
        client.hello()
        return client

    def hello(self, energy_mode: bool = False) -> DeviceInfo:
        """`name` (twice: the first ends whatever the DUT half-received, its answer is not read), `profile`,
        then `timestamp`, which a performance-mode DUT answers with an m-lap-us- line and an energy-mode one
        with a GPIO pulse. Never a bare `%`: the reference parser passes strtok's NULL to strncmp.
        energy_mode: the DUT is expected to be an energy-mode build (`harness flash --eembc-mode energy`
        checks what it uploaded): an m-lap-us- line is then the refusal, and no session can use it."""
        check = self._performance_check if energy_mode else self._energy_check
        waiting = self.port.read(self.port.in_waiting) if self.port.in_waiting else b""
        self.port.reset_input_buffer()
        self._pending = b""
        if ENERGY_BANNER.encode() in waiting and not energy_mode:
            raise EnergyModeFirmware(ENERGY_MODE)
        first = self.command("name", tolerate_errors=True)
        if "m-init-done" in first and not any(x.startswith("m-name-dut-") for x in first):
            # the boot banner's m-ready (a DUT that boots as the link opens: QEMU); the answer comes next
            check(first)
            first = self._until_ready("name", self.timeout, tolerate_errors=True)
        check(first)
        name = _field(self.command("name"), "m-name-dut-")
        model = _field(self.command("profile"), "m-model-")
        check(self.command("timestamp"), probe=True)
        # Protocol version 0 and no model hash: nothing here is reported by the DUT but its name and model.
        info = DeviceInfo(
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
        self.info = self._identified(info)
        self.stats.baud = getattr(self.port, "baudrate", 0)
        return self.info

    def load_input(self, data: bytes) -> None:
        if len(data) != self.input_spec.bytes:
            raise LinkError(f"input is {len(data)} bytes, the model expects {self.input_spec.bytes}")
        if self.uint8_input:
            data = (np.frombuffer(data, np.uint8) ^ 0x80).tobytes()  # int8 v as the uint8 v + 128
        expecting = self.command(f"db load {len(data)}")
        for line in expecting:
            over = OVER_MAXIMUM.fullmatch(line)
            if over:  # the reference has taken the size anyway: no byte may follow
                raise DutInputMismatch(
                    f"the DUT holds at most {over[2]} input bytes (its MAX_DB_INPUT_SIZE) and refused the "
                    f"model's {len(data)}: {self._input_fix(int(over[2]))}"
                )
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
        self._check_infer_answer(lines)
        self._slowest_inference = max(self._slowest_inference, (answered - started) / (count + warmups))
        try:
            laps = [(int(x.removeprefix("m-lap-us-")), i) for i, x in enumerate(lines) if x.startswith("m-lap-us-")]
        except ValueError:
            raise LinkError(f"`infer` answered a timestamp that is not a number: {lines}") from None
        if not laps:
            raise EnergyModeFirmware(ENERGY_MODE)
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

    def back_to_back(self, data: bytes, count: int) -> list[Span]:
        """One `infer count 0`, as MLPerf Tiny's energy mode runs a window: the DUT's own time of it."""
        self.load_input(data)
        self.invoke(count, 0)
        start, end = self.last_device_window
        return [Span(count, end - start, start, self.last_invoke[1])]

    def command(self, text: str, timeout: float | None = None, tolerate_errors: bool = False) -> list[str]:
        """Send `text%` and return the lines up to m-ready. An e- line raises EembcError."""
        wire = (text + "%").encode()
        self.port.write(wire)
        self.stats.frames_sent += 1
        wait = (timeout or self.timeout) + len(wire) * 10 / (getattr(self.port, "baudrate", 0) or 115200)
        return self._until_ready(text, wait, tolerate_errors)

    def _until_ready(self, text: str, wait: float, tolerate_errors: bool = False) -> list[str]:
        """The lines up to the next m-ready, within `wait` s (`text`: the command they answer, for errors)."""
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
        baud = getattr(self.port, "baudrate", 0)
        raise LinkError(
            f"no m-ready after `{text[:40]}%` within {wait:.1f} s at {baud} baud; check the port, that the board "
            f"runs MLPerf Tiny firmware and its rate (the reference talks {REFERENCE_BAUD}, 9600 in energy "
            f"mode): {setting('baud')} sets it"
        )

    def meet_firmware_of(self, dut) -> None:
        self.expect(dut.model if dut else None, bool(dut and dut.input == "uint8"))

    @property
    def dut_model(self) -> str:
        """The model the DUT's `profile` names (vww01, kws01, …), as its build id keeps it."""
        return self.info.build_id.removeprefix("eembc:") if self.info else ""

    def expect(self, model: str | None = None, uint8_input: bool = False) -> None:
        """On MLPerf Tiny firmware (a real board): what the model card says of the DUT (its [eembc] table),
        the model `profile` names and whether it takes an int8 input as uint8 (the reference VWW and IC
        th_load_tensor subtract 128), and the input size of the benchmark it names, checked before any
        sample: a reference th_load_tensor given more bytes than it takes uses the first ones silently."""
        reported = self.dut_model
        if model and reported != model:
            raise DutInputMismatch(
                f"the DUT runs {reported} (its `profile` answer) but the model card is for {model}; "
                f"pass the card of the firmware's model to {setting('model')}"
            )
        if reported in REFERENCE_INPUTS and self.input_spec.bytes != REFERENCE_INPUTS[reported][0]:
            takes, layout = REFERENCE_INPUTS[reported]
            raise DutInputMismatch(
                f"the DUT runs {reported}, whose input is {layout} ({takes} bytes, what the MLPerf Tiny "
                f"runner sends), but the model's input is {self.input_spec.bytes} bytes: {self._input_fix(takes)}"
            )
        self.uint8_input = uint8_input

    def _input_fix(self, takes: int) -> str:
        from harness.model.cards import all_cards

        model = self.dut_model
        cards = [name for name, card in all_cards().items() if model and card.eembc and card.eembc.model == model]
        named = f"; for {model} firmware: {setting('model')} {' or '.join(cards)}" if cards else ""
        return (
            f"pass {setting('model')} a card whose input the firmware's th_load_tensor takes ({takes} bytes)"
            f"{named} (docs/eembc.md)"
        )

    def _check_infer_answer(self, lines: list[str]) -> None:
        """`infer` answers m- lines; a plain line is the firmware saying something went wrong."""
        for line in lines:
            wrong = WRONG_SIZE.fullmatch(line)
            if wrong:
                raise DutInputMismatch(
                    f"the DUT's th_load_tensor took {wrong[1]} input elements where it expects {wrong[2]} and "
                    f"kept its previous input, so no result of this run would be the sample's: "
                    f"{self._input_fix(int(wrong[2]))}"
                )
            if line == ENERGY_BANNER:
                raise EnergyModeFirmware(ENERGY_MODE)
        plain = [x for x in lines if not x.startswith(("m-", "e-"))]
        if plain:
            raise LinkError(f"the DUT printed `{plain[0][:80]}` while it inferred; its result is not trusted")

    def _energy_check(self, lines: list[str], probe: bool = False) -> None:
        if ENERGY_BANNER in lines or (probe and not any(x.startswith("m-lap-us-") for x in lines)):
            raise EnergyModeFirmware(ENERGY_MODE)

    def _performance_check(self, lines: list[str], probe: bool = False) -> None:
        """Where an energy-mode build is expected: a timestamp printed as a line is a performance-mode one's."""
        if any(x.startswith("m-lap-us-") for x in lines) or "m-timestamp-mode-performance" in lines:
            raise PerformanceModeFirmware(
                "the DUT prints its timestamps as m-lap-us- lines: it runs performance-mode firmware where an "
                f"energy-mode build was expected; flash it again with {setting('eembc_mode')} energy"
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
        """The printed values as the output: the output tensor's bytes (exact for 8-bit outputs), or the score."""
        try:
            values = [float(v) for v in line.removeprefix("m-results-[").rstrip("]").split(",") if v.strip()]
        except ValueError:
            raise LinkError(f"m-results holds something other than numbers: {line[:80]}") from None
        count = self.computation.values
        if len(values) != count:
            what = "the model's output has" if self.computation.kind == ModelOutputs.kind else "the DUT's result has"
            raise LinkError(f"m-results has {len(values)} values, {what} {count}")
        return self.computation.from_printed(values)


def _field(lines: list[str], prefix: str) -> str:
    for line in lines:
        match = re.fullmatch(re.escape(prefix) + r"\[(.*)\]", line)
        if match:
            return match.group(1)
    raise LinkError(f"the DUT's answer has no {prefix}[…] line: {lines}")
