"""The EEMBC DUT's command grammar against mlcommons/tiny's benchmark/api/internally_implemented.cpp.

Each case is a list of steps, command bytes -> the exact reply bytes up to and including m-ready,
on a fresh virtual board; docs/eembc.md ("harness's DUT and the upstream grammar") lists where a
reply is harness's own because upstream would overrun its buffer or loop for days.
"""

import random
import re
import threading
import time
from contextlib import contextmanager

import pytest
import serial

from harness.device.sim_board import SimBoard
from tests.fake_runner import ChecksumRunner

ANSWER_SECONDS = 1.0  # a bound on a hang, not a speed requirement
LAP = "{lap}"
HELP = (
    "ULPMark for tinyML Firmware V0.0.1",
    "",
    "help         : Print this information",
    "name         : Print the name of the device",
    "timestsamp   : Generate a timetsamp",
    "db SUBCMD    : Manipulate a generic byte buffer",
    "  load N     : Allocate N bytes and set load counter",
    "  db HH[HH]* : Load 8-bit hex byte(s) until N bytes",
    "  print [N=16] [offset=0]",
    "             : Print N bytes at offset as hex",
    "infer N [W=0]: Load input, execute N inferences after W warmup loops",
    "results      : Return the result fp32 vector",
)


def reply(*lines: str) -> str:
    return "".join(f"{x}\r\n" for x in (*lines, "m-ready"))


def ran(n: int, w: int) -> str:
    return reply(
        f"m-warmup-start-{w}",
        "m-warmup-done",
        f"m-infer-start-{n}",
        LAP,
        LAP,
        "m-infer-done",
        "m-results-[10.000000,11.000000,]",  # ChecksumRunner(4, 2) on 01020304
    )


NAME = reply("m-name-dut-[test-dut]")
READY = reply()
LOAD4 = [(b"db load 4%", reply("m-[Expecting 4 bytes]")), (b"db 01020304%", reply("m-load-done"))]
MORE = reply("e-[More bytes than db load announced]")
ITERATIONS, WARMUP = reply("e-[Inference iterations must be >0]"), reply("e-[Inference warmup must be >=0]")
OVER_N, OVER_W = (reply(f"e-[Inference {what} must be <=1000000]") for what in ("iterations", "warmup"))

CASES = {
    "name": [(b"name%", NAME)],
    "name, trailing space": [(b"name %", NAME)],
    "name, leading space": [(b" name%", NAME)],
    "name, extra token ignored": [(b"name extra%", NAME)],
    "name, newline is part of the token": [(b"name\n%", reply("e-[Unknown command: name\n]"))],
    "name is case-sensitive": [(b"NAME%", reply("e-[Unknown command: NAME]"))],
    "empty command": [(b"%", reply("e-[Unknown command: ]"))],
    "spaces only": [(b"   %", reply("e-[Unknown command: ]"))],
    "unknown: first token only": [(b"bogus arg%", reply("e-[Unknown command: bogus]"))],
    "over 80 characters: the first 80 kept": [(b"x" * 100 + b"%", reply(f"e-[Unknown command: {'x' * 80}]"))],
    "timestamp": [(b"timestamp%", reply(LAP))],
    "profile": [(b"profile%", reply("m-profile-[ULPMark for tinyML Firmware V0.0.1]", "m-model-[vww01]"))],
    "help": [(b"help%", reply(*HELP))],
    "db, no subcommand": [(b"db%", reply("e-[Command 'db' requires a subcommand]"))],
    "db load, no count": [(b"db load%", reply("e-[Command 'db load' requires the # of bytes]"))],
    "db load 0": [(b"db load 0%", reply("e-[Command 'db load' must be >0 bytes]"))],
    "db load, not a number": [(b"db load x%", reply("e-[Command 'db load' must be >0 bytes]"))],
    "db load 4": [(b"db load 4%", reply("m-[Expecting 4 bytes]"))],
    "db  load  4, double spaces": [(b"db  load  4%", reply("m-[Expecting 4 bytes]"))],
    "db load -1": [(b"db load -1%", "Supplied buffer size -1 exceeds maximum of 27648\n" + READY)],
    "db load 2^32-1 saturates as atoi": [
        (b"db load 4294967295%", "Supplied buffer size 2147483647 exceeds maximum of 27648\n" + READY)
    ],
    "db load one over the buffer": [
        (b"db load 27649%", "Supplied buffer size 27649 exceeds maximum of 27648\n" + READY)
    ],
    "db hex in two chunks": [
        (b"db load 4%", reply("m-[Expecting 4 bytes]")),
        (b"db 0102%", READY),
        (b"db 0304%", reply("m-load-done")),
    ],
    "db hex past the count: the rest disregarded": [
        (b"db load 2%", reply("m-[Expecting 2 bytes]")),
        (b"db 010203%", reply("m-load-done")),
    ],
    "db hex, only the first token": [
        (b"db load 4%", reply("m-[Expecting 4 bytes]")),
        (b"db 01 02%", READY),
        (b"db print%", "m-buffer-01-00-00-00\r\n\r\n" + READY),
    ],
    "db hex, invalid digit": [
        (b"db load 4%", reply("m-[Expecting 4 bytes]")),
        (b"db 0g%", reply("e-[Invalid hex digit '0g']")),
    ],
    "db hex, odd digits": [
        (b"db load 4%", reply("m-[Expecting 4 bytes]")),
        (b"db 030%", reply("e-[Insufficent number of hex digits]")),
    ],
    "db hex over 80 characters: truncated to 77 digits": [
        (b"db load 40%", reply("m-[Expecting 40 bytes]")),
        (b"db " + b"01" * 40 + b"%", reply("e-[Insufficent number of hex digits]")),
    ],
    "db hex without db load": [(b"db 01%", MORE)],
    "db hex after the load is done": [*LOAD4, (b"db 05%", MORE)],
    "db hex after an oversized load": [
        (b"db load 99999%", "Supplied buffer size 99999 exceeds maximum of 27648\n" + READY),
        (b"db 01%", MORE),
    ],
    "db print, short row and the empty line": [
        (b"db load 2%", reply("m-[Expecting 2 bytes]")),
        (b"db 0a0b%", reply("m-load-done")),
        (b"db print%", "m-buffer-0a-0b\r\n\r\n" + READY),
    ],
    "db print, full row": [
        (b"db load 8%", reply("m-[Expecting 8 bytes]")),
        (b"db 0102030405060708%", reply("m-load-done")),
        (b"db print%", "m-buffer-01-02-03-04-05-06-07-08\r\n" + READY),
    ],
    "infer, no count: 1 after 10 warm-ups": [*LOAD4, (b"infer%", ran(1, 10))],
    "infer N, no warm-ups given: 10": [*LOAD4, (b"infer 3%", ran(3, 10))],
    "infer N W": [*LOAD4, (b"infer 3 1%", ran(3, 1))],
    "infer, spaces and an extra token": [*LOAD4, (b"infer  2   0  extra%", ran(2, 0))],
    "infer 0": [*LOAD4, (b"infer 0%", ITERATIONS)],
    "infer -1 0": [*LOAD4, (b"infer -1 0%", ITERATIONS)],
    "infer 1 -1": [*LOAD4, (b"infer 1 -1%", WARMUP)],
    "infer, not a number": [*LOAD4, (b"infer abc%", ITERATIONS)],
    "infer 2^32-1 (upstream: 2^31-1 inferences)": [*LOAD4, (b"infer 4294967295%", OVER_N)],
    "infer 2^64-1 0": [*LOAD4, (b"infer 18446744073709551615 0%", OVER_N)],
    "infer -2^64": [*LOAD4, (b"infer -18446744073709551616%", ITERATIONS)],
    "infer 1 2^32-1": [*LOAD4, (b"infer 1 4294967295%", OVER_W)],
    "infer one over the bound": [*LOAD4, (b"infer 1000001 0%", OVER_N)],
    "infer without an input": [(b"infer 1 0%", reply("e-[Loaded 0 bytes, the input tensor needs 4]"))],
    "infer on a short input": [
        (b"db load 4%", reply("m-[Expecting 4 bytes]")),
        (b"db 01%", READY),
        (b"infer 1 0%", reply("e-[Loaded 1 bytes, the input tensor needs 4]")),
    ],
    "results before infer": [(b"results%", reply("e-[No results: run infer first]"))],
    "results after infer": [
        *LOAD4,
        (b"infer 1 0%", ran(1, 0)),
        (b"results%", reply("m-results-[10.000000,11.000000,]")),
    ],
}


def _pattern(expected: str) -> re.Pattern[bytes]:
    return re.compile(re.escape(expected.encode()).replace(re.escape(LAP.encode()), rb"m-lap-us-\d+"), re.DOTALL)


@contextmanager
def _dut():
    with SimBoard(
        ChecksumRunner(4, 2),
        board_id="test-dut",
        build_id="test-build",
        rx_frame=524,
        tx_frame=524,
        rx_buffer=4096,
        eembc_model="vww01",
    ) as board:
        stop = threading.Event()
        thread = threading.Thread(target=lambda: [board.poll(20) for _ in iter(stop.is_set, True)], daemon=True)
        thread.start()
        port = serial.Serial(board.pty_path, baudrate=115200, timeout=0.02)  # opening it drops the boot banner
        try:
            yield port
        finally:
            stop.set()
            thread.join()
            port.close()


def _ask(port, command: bytes) -> bytes:
    """Send one command; the bytes that came up to its m-ready, read for ANSWER_SECONDS at most (a reply
    that is not whole by then fails the caller's check of its bytes)."""
    deadline = time.monotonic() + ANSWER_SECONDS
    port.write(command)
    got = b""
    while not got.endswith(b"m-ready\r\n") and time.monotonic() < deadline:
        got += port.read(4096)
    return got


@pytest.mark.parametrize("steps", CASES.values(), ids=CASES.keys())
def test_each_command_gets_the_reply_upstream_gives(steps):
    with _dut() as port:
        for command, expected in steps:
            got = _ask(port, command)
            assert _pattern(expected).fullmatch(got), (command, got)


def test_no_command_of_the_table_or_a_mix_of_its_tokens_makes_the_dut_hang():
    commands = [command for steps in CASES.values() for command, _ in steps]
    tokens = sorted({t for c in commands for t in c.rstrip(b"%").split(b" ") if t})
    tokens = [t for t in tokens if not (t.isdigit() and 100 < int(t) <= 1_000_000)]  # long but legitimate runs
    mix = random.Random(1)
    commands += [b" ".join(mix.choices(tokens, k=mix.randint(0, 5))) + b"%" for _ in range(200)]
    with _dut() as port:
        for command in commands:
            got = _ask(port, command)
            assert got.endswith(b"m-ready\r\n") and got.count(b"m-ready") == 1, (command, got)
