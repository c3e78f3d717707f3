"""The ranges of a run record's figures, declared once (docs/cli.md, "What harness reads").

A figure read back from a run folder outside its range (an accuracy of NaN or 5.0, a negative count, an
arena of -1 bytes) makes the run damaged, named with its file and field: a report, a compare or a gate never
works from it. Types are strict: a count is a whole number, never a float or a boolean; a figure is a number,
never a string. Records are plain dataclasses, so these constraints bind only when a record is read
(pydantic validates it), never when harness builds one."""

from typing import Annotated

import pydantic

# A share of samples, events or detections: accuracy, F1, agreement, recall, precision, AUC.
Fraction = Annotated[float, pydantic.Field(ge=0, le=1, allow_inf_nan=False, strict=True)]
# The same figure as a percentage (the MLPerf Tiny runner's Top 1 %).
Percent = Annotated[float, pydantic.Field(ge=0, le=100, allow_inf_nan=False, strict=True)]
# How many of something: samples, subset members, true positives, files, windows, bytes, hertz.
Count = Annotated[int, pydantic.Field(ge=0, strict=True)]
# A measured quantity that cannot be negative: a latency, a duration, a number of steps, a rate per hour.
NonNegative = Annotated[float, pydantic.Field(ge=0, allow_inf_nan=False, strict=True)]
# A figure with no natural bound that must still be a real number (energies after idle is subtracted).
Finite = Annotated[float, pydantic.Field(allow_inf_nan=False, strict=True)]
