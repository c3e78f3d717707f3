"""Numbers as people type them: ASCII digits only. Python's int() and float() also take digits of other
scripts (an Arabic-Indic one is 1), underscores and surrounding Unicode spaces; no user typing a count or a
figure means those. Every option, CSV field and log value harness reads as a number comes through here.

`ascii_int` and `ascii_float` raise ValueError (a `NotFinite` one for NaN and infinities, so a reader can say
which); `int_or_none` and `float_or_none` give None instead, for readers that word the refusal themselves."""

import math
import re

MAX_DIGITS = 30  # more is no count, flag, index or id; int() spends quadratic time on thousands of digits

_WHOLE = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|nan|inf|infinity)", re.IGNORECASE)


class NotFinite(ValueError):
    """A number that is NaN or infinite (written so, or too large for a float: 1e400)."""


def ascii_int(text: str) -> int:
    """int(text) for at most MAX_DIGITS ASCII digits, an optional sign and surrounding spaces (no Unicode
    digits, underscores, point or exponent); else ValueError."""
    text = text.strip()
    if not _WHOLE.fullmatch(text) or len(text.lstrip("+-")) > MAX_DIGITS:
        raise ValueError(f"not a whole number of at most {MAX_DIGITS} digits: {text!r}")
    return int(text)


def ascii_float(text: str) -> float:
    """A finite float(text) from ASCII digits, point and exponent, surrounding spaces allowed (no Unicode digits
    or underscores); else ValueError, NotFinite for 'nan', 'inf' and numbers too large for a float (1e400)."""
    text = text.strip()
    if not _REAL.fullmatch(text):
        raise ValueError(f"not a number: {text!r}")
    value = float(text)
    if not math.isfinite(value):
        raise NotFinite(f"not a finite number: {text!r}")
    return value


def int_or_none(text: str) -> int | None:
    """ascii_int(text), or None where it would raise."""
    try:
        return ascii_int(text)
    except ValueError:
        return None


def float_or_none(text: str) -> float | None:
    """ascii_float(text), or None where it would raise (NaN and infinities included)."""
    try:
        return ascii_float(text)
    except ValueError:
        return None
