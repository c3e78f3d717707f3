"""A stand-in for the MLPerf Tiny reference DUT firmware, on a pseudo-terminal: what mlcommons/tiny's
benchmark/api/internally_implemented.cpp and reference_submissions/person_detection/submitter_implemented.cpp
do (at harness.link.eembc.UPSTREAM_COMMIT), including what they do wrong:

- the parser gives strtok's first token to strncmp unchecked: a command of no token (a bare `%`) would
  crash the firmware, so here the DUT goes silent for good and `crashed` is set;
- `db load N` over MAX_DB_INPUT_SIZE prints a plain line without `e-` (and takes N anyway);
- th_load_tensor given fewer bytes than it takes prints a plain line and keeps its previous input; given
  more, it takes the first ones (ee_get_buffer copies min(loaded, expected));
- energy mode (EE_CFG_ENERGY_MODE 1) prints m-timestamp-mode-energy and no m-lap-us- lines.

Its model (vww01 by default): two int8 outputs from the int8 input the firmware makes by subtracting 128
from the uint8 bytes it is sent; th_results prints them dequantized with `%0.3f` and a trailing comma, as the
reference does (nresults 3 for 2 classes). As `model` kws01 or ic01 it takes and prints as those reference
submissions do (reference_submissions/keyword_spotting, image_classification: see results_text).

As ad01 (reference_submissions/anomaly_detection/submitter_implemented.cpp): th_load_tensor takes 640
float32 features (its own size check after the copy: `Input db has N elemented, expected 640`) and quantizes each with
util/quantization_helpers.h's QuantizeFloatToInt8 (float32 `round(v / scale) + zero_point`, C's round,
clamped); th_results prints `m-results-[%0.3f]` of calculate_result, the mean of (dequantized output -
feature)^2 summed in float32 one feature after another. Written here element by element, apart from
harness's own (harness/model/dut.py), so each checks the other.
"""

import math
import os
import pty
import threading
import time
import tty

import numpy as np

CMD_SIZE = 80  # EE_CMD_SIZE
OUTPUT_SCALE, OUTPUT_ZERO = 1 / 256, -128
TICKS_PER_INFERENCE_US = 1500
SUBTRACT_128 = ("vww01", "ic01")  # the reference th_load_tensor makes int8 of uint8 bytes; kws01 takes int8
AD01_INPUT, AD01_OUTPUT = (0.391, 89), (0.3645, 96)  # ad01_int8.tflite's (scale, zero point)


def reference_outputs(values: np.ndarray) -> np.ndarray:
    """The stand-in model: int8 input in, two int8 outputs (the reference model's shape and quantization)."""
    total = int(values.astype(np.int64).sum())
    first = (total % 256) - 128
    return np.array([first, -1 - first], np.int8)


class ReferenceDut:
    def __init__(
        self, model: str = "vww01", input_size: int = 96 * 96 * 3, energy: bool = False, network=None, output=None
    ):
        """`network`: int8 input values to int8 outputs (default: reference_outputs); `output`: its output
        (scale, zero point)."""
        self.model, self.input_size, self.max_db = model, input_size, input_size  # MAX_DB_INPUT_SIZE
        self.energy = energy
        self.network = network or reference_outputs
        self.anomaly = model == "ad01"  # float32 features in, the reconstruction's error out
        default = AD01_OUTPUT if self.anomaly else (OUTPUT_SCALE, OUTPUT_ZERO)
        self.output_scale, self.output_zero = output or default
        elements = input_size // 4 if self.anomaly else input_size
        self._features = [np.float32(0)] * elements  # ad01: input_float, the static array th_load_tensor fills
        self.crashed = False
        self.commands: list[str] = []  # every command the DUT parsed, as received
        self._buffer = bytearray(self.max_db)
        self._size = self._pos = 0
        self._input = np.zeros(elements, np.int8)  # what th_load_tensor last set
        self._clock_us = 1_000_000
        self._cmd = bytearray()
        self._master, slave = pty.openpty()
        tty.setraw(slave)
        self.path = os.ttyname(slave)
        self._slave = slave
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "ReferenceDut":
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        os.close(self._master)
        os.close(self._slave)

    def boot(self) -> None:
        """ee_benchmark_initialize's banner (th_timestamp_initialize, th_final_initialize, m-init-done)."""
        mode = "energy" if self.energy else "performance"
        self._print(f"m-timestamp-mode-{mode}\r\n")
        self._timestamp()
        self._print("m-init-done\r\nm-ready\r\n")

    # --- the firmware -------------------------------------------------------------------------------------
    def _serve(self) -> None:
        import select

        while not self._stop.is_set():
            if not select.select([self._master], [], [], 0.02)[0]:
                continue
            try:
                data = os.read(self._master, 4096)
            except OSError:
                return
            for byte in data:
                if self.crashed:
                    continue  # a segfaulted board answers nothing, ever
                if byte == ord("%"):  # ee_serial_callback
                    command, self._cmd = self._cmd.decode("ascii", "replace"), bytearray()
                    self._parse(command)
                elif len(self._cmd) < CMD_SIZE:
                    self._cmd.append(byte)
                else:
                    self._cmd[-1] = byte

    def _print(self, text: str) -> None:
        os.write(self._master, text.encode())

    def _timestamp(self) -> None:
        if not self.energy:  # energy mode: a GPIO pulse, nothing on the serial line
            self._print(f"m-lap-us-{self._clock_us % (1 << 32)}\r\n")

    def _parse(self, command: str) -> None:
        self.commands.append(command)
        tokens = command.split(" ")
        tokens = [t for t in tokens if t]  # strtok skips runs of delimiters
        if not tokens:
            self.crashed = True  # strncmp(NULL, ...): the reference segfaults
            return
        tok, rest = tokens[0], tokens[1:]
        if tok == "name":
            self._print("m-name-dut-[unspecified]\r\n")
        elif tok == "timestamp":
            self._timestamp()
        elif tok == "profile":
            self._print(f"m-profile-[ULPMark for tinyML Firmware V0.0.1]\r\nm-model-[{self.model}]\r\n")
        elif tok == "db":
            self._db(rest)
        elif tok == "infer":
            n = int(rest[0]) if rest else 1
            w = int(rest[1]) if len(rest) > 1 else 10
            self._infer(n, w)
        elif tok == "results":
            self._results()
        else:
            self._print(f"e-[Unknown command: {tok}]\r\n")
        self._print("m-ready\r\n")

    def _db(self, rest: list[str]) -> None:
        if not rest:
            self._print("e-[Command 'db' requires a subcommand]\r\n")
        elif rest[0] == "load":
            size = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else 0
            self._size, self._pos = size, 0
            if size > self.max_db:
                self._print(f"Supplied buffer size {size} exceeds maximum of {self.max_db}\n")
            else:
                self._print(f"m-[Expecting {size} bytes]\r\n")
        else:
            digits = rest[0][:CMD_SIZE]
            if len(digits) % 2:
                self._print("e-[Insufficent number of hex digits]\r\n")
                return
            for i in range(0, len(digits), 2):
                try:
                    value = int(digits[i : i + 2], 16)
                except ValueError:
                    self._print(f"e-[Invalid hex digit '{digits[i : i + 2]}']\r\n")
                    return
                self._buffer[self._pos % self.max_db] = value  # the reference overruns; this one wraps
                self._pos += 1
                if self._pos == self._size:
                    self._print("m-load-done\r\n")
                    return

    def _infer(self, n: int, w: int) -> None:
        got = min(self.input_size, self._pos)  # ee_get_buffer
        if self.anomaly:
            self._load_features(got)
        elif got != self.input_size:
            self._print(f"Input db has {got} elemented, expected {self.input_size}\n")
        else:
            received = np.frombuffer(bytes(self._buffer[:got]), np.uint8)
            self._input = (received ^ 0x80 if self.model in SUBTRACT_128 else received).view(np.int8)
        self._print(f"m-warmup-start-{w}\r\nm-warmup-done\r\nm-infer-start-{n}\r\n")
        self._timestamp()
        time.sleep(0.001)
        self._clock_us += n * TICKS_PER_INFERENCE_US
        self._timestamp()
        self._print("m-infer-done\r\n")
        self._results()

    def _load_features(self, got: int) -> None:
        """The AD th_load_tensor: ee_get_buffer copies into input_float before the size check (a short load
        replaces the first features and keeps the old quantized input), then QuantizeFloatToInt8 each."""
        self._features[: got // 4] = list(np.frombuffer(bytes(self._buffer[: got // 4 * 4]), np.float32))
        if got // 4 != self.input_size // 4:
            self._print(f"Input db has {got // 4} elemented, expected {self.input_size // 4}\n")
            return
        scale, zero = np.float32(AD01_INPUT[0]), AD01_INPUT[1]
        quantized = []
        for v in self._features:
            ratio = float(v / scale)  # float / float: float32
            rounded = math.copysign(math.floor(abs(ratio) + 0.5), ratio)  # C's round: halves away from zero
            quantized.append(min(127, max(-128, int(rounded) + zero)))
        self._input = np.array(quantized, np.int8)

    def _results(self) -> None:
        if self.anomaly:  # calculate_result, then th_printf("m-results-[%0.3f]\r\n", result)
            scale, zero, total = np.float32(self.output_scale), self.output_zero, np.float32(0)
            for q, v in zip(self.network(self._input), self._features, strict=True):
                diff = np.float32(np.float32(int(q) - zero) * scale) - v
                total = np.float32(total + np.float32(diff * diff))
            self._print(f"m-results-[{float(total / np.float32(len(self._features))):0.3f}]\r\n")
            return
        self._print("m-results-[" + results_text(self.model, self.network(self._input), self.output) + "]\r\n")

    @property
    def output(self) -> tuple[float, int]:
        return self.output_scale, self.output_zero

    @property
    def baud(self) -> int:
        """The rate the host set on the line (a pseudo-terminal keeps it, though it moves bytes at any)."""
        import termios

        speed = termios.tcgetattr(self._slave)[4]
        return next(
            int(n[1:]) for n in dir(termios) if n[1:].isdigit() and n[0] == "B" and getattr(termios, n) == speed
        )


def results_text(model: str, outputs: np.ndarray, output: tuple[float, int]) -> str:
    """What each reference th_results prints between `m-results-[` and `]`, from DequantizeInt8ToFloat's
    float: vww01 `%0.3f,` per value (nresults 3 for 2 classes: a comma after the last), ic01 `%0.3f`
    joined by commas, kws01 three digits cut off, not rounded (`0.%d` then `%d` `%d` of x10, x100, x1000)."""
    scale, zero = np.float32(output[0]), output[1]
    values = [np.float32(np.float32(int(q) - zero) * scale) for q in outputs]
    if model == "kws01":
        return ",".join(
            f"0.{int(v * np.float32(10))}{int(v * np.float32(100)) % 10}{int(v * np.float32(1000)) % 10}"
            for v in values
        )
    if model == "ic01":
        return ",".join(f"{float(v):0.3f}" for v in values)
    return "".join(f"{float(v):0.3f}," for v in values)
