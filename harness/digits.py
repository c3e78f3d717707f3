"""Numbers as people type them: ASCII digits only. Python's int() and float() also take digits of other
scripts (an Arabic-Indic one is 1), underscores, 'nan' and 'infinity'; no user typing a count means those."""

import math
import re

_WHOLE = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def ascii_int(text: str) -> int:
    """int(text) for ASCII digits only (no Unicode digits, underscores, or exponent); else ValueError."""
    if not _WHOLE.fullmatch(text.strip()):
        raise ValueError(f"not a whole number: {text!r}")
    return int(text)


def ascii_float(text: str) -> float:
    """A finite float(text) from ASCII digits only (no 'nan', 'inf', Unicode digits or underscores); else
    ValueError. 1e400 is refused too: it is infinite as a float."""
    if not _REAL.fullmatch(text.strip()):
        raise ValueError(f"not a number: {text!r}")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value
