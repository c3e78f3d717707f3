"""Values typed on the command line: numbers in range, seeds, baud rates, host reference names, link fault
specs. Each is an argparse type: bad text is refused in one line naming what was expected. They live below
the command line so that settings declared elsewhere (harness/eval/settings.py) can name them."""

import argparse
import math

from harness.defaults import REFERENCE_NAMES
from harness.errors import UserError


def _number(text: str, convert, valid, expected: str):
    """`text` converted and checked, or the parser's one-line error naming what was expected."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "a whole number of at least 1")


def positive_float(text: str) -> float:
    return _number(text, float, lambda v: v > 0 and math.isfinite(v), "a number of seconds above 0")


def non_negative_float(text: str) -> float:
    return _number(text, float, lambda v: v >= 0 and math.isfinite(v), "a number of at least 0")


def whole_number(low: int, high: int, expected: str):
    """An argparse type: a whole number in low..high, else one line naming `expected`."""

    def parse(text: str) -> int:
        return _number(text, int, lambda v: low <= v <= high, expected)

    return parse


def real_number(low: float, high: float, expected: str):
    """An argparse type: a finite number in low..high (NaN and infinities refused)."""

    def parse(text: str) -> float:
        return _number(text, float, lambda v: math.isfinite(v) and low <= v <= high, expected)

    return parse


U32 = (1 << 32) - 1
non_negative_int = whole_number(0, U32, "a whole number of at least 0")
seed_number = whole_number(0, (1 << 63) - 1, "a seed: a whole number of at least 0")
baud_rate = whole_number(0, U32, "a baud rate: a whole number of at least 0 (0: unpaced or stay)")
serial_baud = whole_number(1, U32, "a baud rate: a whole number of at least 1")
milliseconds = whole_number(0, U32, "a number of milliseconds of at least 0")
invoke_ms = real_number(0, 3_600_000, "a number of milliseconds from 0 to 3600000")
fraction = real_number(0, 1e6, "a relative change of at least 0 (e.g. 0.02 for 2 %)")
decibels = real_number(-200, 200, "a number of decibels from -200 to 200")


def port_number(text: str) -> int:
    return _number(text, int, lambda v: 0 <= v <= 65535, "a port number 0..65535 (0: any free port)")


def reference_names(text: str) -> tuple[str, ...]:
    if text.strip() == "none":  # the board alone: no host inference
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in REFERENCE_NAMES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown reference {', '.join(unknown)}; valid: {', '.join(REFERENCE_NAMES)}, or none"
        )
    return names


def fault_spec(text: str):
    from harness.link.faults import FaultSpec

    try:
        return FaultSpec.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(exc.worded_for_cli()) from None


def place_tags(text: str) -> str:
    """labgrid place tags, `key=value` comma-separated (e.g. board=nucleo_h743,lab=2): kept as given."""
    pairs = [part.strip() for part in text.split(",") if part.strip()]
    if not pairs or not all(_is_tag(pair) for pair in pairs):
        raise argparse.ArgumentTypeError(f"expected tags as key=value[,key=value], got {text!r}")
    return ",".join(pairs)


def _is_tag(pair: str) -> bool:
    key, equals, value = pair.partition("=")
    return bool(equals) and key.strip().isidentifier() and bool(value.strip()) and "=" not in value


def tag_filter(text: str) -> dict[str, str]:
    """place_tags' text as the key -> value filter a labgrid reservation takes."""
    return {key.strip(): value.strip() for key, _, value in (pair.partition("=") for pair in text.split(","))}


def name_list(text: str | None) -> list[str]:
    """A comma-separated list (several --port, --serial or --labgrid-place values), blanks dropped."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]
