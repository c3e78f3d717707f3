"""What the run record's parts share: the label of a figure's source, the record's kinds, and the one way
a part becomes the JSON it is stored as and back (pydantic over the frozen dataclasses of
harness/results/manifest.py and harness/results/summary.py).

A part is read strictly: every field of its type and every figure in its range (harness/results/ranges.py);
`field_problem` names the first field that is not, for a person."""

from typing import Annotated, Literal

import pydantic
from pydantic import AfterValidator

from harness.errors import UserError
from harness.results.ranges import Count

Kind = Literal["eval", "stream"]
KINDS: tuple[Kind, ...] = ("eval", "stream")
Source = Literal["device", "emulated", "sim", "host", "estimated"]
# 0 from a DUT means it did not report the figure (no model runs in an empty arena); older runs stored 0.
Reported = Annotated[Count | None, AfterValidator(lambda value: value or None)]
Hertz = Annotated[int, pydantic.Field(ge=1, strict=True)]
# The manifest and summary refuse a key they do not declare (a misspelt or foreign key is damage).
STRICT = pydantic.ConfigDict(extra="forbid")


_ADAPTERS: dict = {}


def adapter(cls) -> pydantic.TypeAdapter:
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = pydantic.TypeAdapter(cls)
    return _ADAPTERS[cls]


def parse(cls, data, where: str = "the run record"):
    """One part of a record from its stored JSON (a part already parsed is returned as it is)."""
    if isinstance(cls, type) and isinstance(data, cls):
        return data
    try:
        return adapter(cls).validate_python(data)
    except pydantic.ValidationError as exc:
        raise UserError(f"{where}: {field_problem(exc)}; it is not a run record harness can read") from None


def field_problem(exc: pydantic.ValidationError) -> str:
    """The first problem pydantic found, for a person: the field's dotted path, what it holds, what is wrong."""
    error = exc.errors()[0]
    # A union's member or a validator's name is no key of the file: leave them out of the path.
    *path, last = error["loc"] or ("",)
    unknown = error["type"] in ("unexpected_keyword_argument", "extra_forbidden")  # the key itself, whatever it is
    parts = [str(part) for part in path if not _internal(part)]
    parts += [str(last)] if unknown or not _internal(last) else []
    name = ".".join(parts) or "the top level"
    if error["type"] == "missing":
        return f"field {name!r} is missing"
    held = repr(error["input"])
    held = held if len(held) <= 40 else held[:37] + "..."
    said = error["msg"].removeprefix("Value error, ")
    return f"field {name!r} is {held}: {said[0].lower()}{said[1:]}"


def _internal(part) -> bool:
    return isinstance(part, str) and (part in KINDS or any(mark in part for mark in "[(") or part[:1].isupper())


def to_json(record) -> dict:
    """A manifest or summary (or any part of one) as the JSON it is stored as."""
    return adapter(type(record)).dump_python(record, mode="json", by_alias=True)
