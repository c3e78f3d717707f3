"""The form an input crosses the wire in: the one place that decides it (docs/protocol.md, "Input encodings").

The device announces in HELLO the encodings it decodes into its input tensor (DeviceInfo.input_encodings);
for each sample the host sends the smallest announced form that decodes to exactly the tensor's bytes, and
the raw bytes otherwise. The device core's decoders are firmware/core/hp_input_forms.c, numbered alike; the
row codec's stream (harness/link/row_codec.py) is one of them, taken when it is smaller than the rest."""

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from harness.errors import UserError
from harness.link import row_codec
from harness.tensors import TensorSpec

# HARNESS_INPUT_FORMS=raw sends every input as its raw bytes, whatever the device decodes: to compare the two, or to
# rule the encoding out while looking into a board. Unset (or "smallest"): the smallest exact form.
FORMS_SETTING = "HARNESS_INPUT_FORMS"


class Encoding(IntEnum):
    RAW = 0
    WIDEN_U8 = 1  # one uint8 per element, widened on the device to the tensor's float32
    WIDEN_I8 = 2  # one int8 per element, widened to float32
    ROWS = 3  # the row codec's stream of the one-byte elements, as they are or widened (harness/link/row_codec.py)


@dataclass(frozen=True)
class WireInput:
    """An input as it goes on the wire: its encoding and the bytes LOAD_INPUT carries (offsets count these)."""

    encoding: Encoding
    data: bytes


Encoder = Callable[[bytes, TensorSpec, int], bytes | None]  # (tensor bytes, tensor, device's longest codec row)


def _widen_to(narrow: type) -> Encoder:
    """The elements as `narrow` integers when widening them back gives the tensor's bytes exactly (so not
    -0.0, NaN, a fraction or a value outside the type); None otherwise."""

    def encode(data: bytes, spec: TensorSpec, codec_row_max: int = 0) -> bytes | None:
        if spec.numpy_dtype != np.float32:
            return None
        values = np.frombuffer(data, dtype="<f4")
        info = np.iinfo(narrow)
        if not np.all((values >= info.min) & (values <= info.max)):  # NaN fails here too
            return None
        wire = values.astype(narrow)
        return wire.tobytes() if wire.astype("<f4").tobytes() == data else None

    return encode


def _one_byte_elements(data: bytes, spec: TensorSpec) -> tuple[np.ndarray, int] | None:
    """The tensor's elements as one byte each, exactly, and how the row codec writes them into the tensor."""
    if spec.numpy_dtype in (np.uint8, np.int8):
        return np.frombuffer(data, spec.numpy_dtype), row_codec.OUT_BYTES
    for narrow, out in ((np.uint8, row_codec.OUT_WIDEN_U8), (np.int8, row_codec.OUT_WIDEN_I8)):
        wire = _widen_to(narrow)(data, spec)
        if wire is not None:
            return np.frombuffer(wire, narrow), out
    return None


def _rows(data: bytes, spec: TensorSpec, codec_row_max: int) -> bytes | None:
    """The row codec's stream of the tensor's one-byte elements, rows laid out as the tensor's shape suggests."""
    found = _one_byte_elements(data, spec)
    if found is None:
        return None
    elements, out = found
    layouts = row_codec.layouts(spec.shape, len(elements), codec_row_max)
    return row_codec.encode(elements, *layouts[0], out) if layouts else None


ENCODERS: dict[Encoding, Encoder] = {
    Encoding.WIDEN_U8: _widen_to(np.uint8),
    Encoding.WIDEN_I8: _widen_to(np.int8),
    Encoding.ROWS: _rows,
}


def wire_form(data: bytes, spec: TensorSpec, announced: int, codec_row_max: int = 0) -> WireInput:
    """The smallest form of `data` (the input tensor's bytes) among those the device announced, raw when no
    other holds it exactly; the row codec only for rows up to `codec_row_max` bytes, the longest the device
    decodes."""
    best = WireInput(Encoding.RAW, data)
    if _only_raw():
        return best
    for encoding, encode in ENCODERS.items():
        if not (announced >> encoding) & 1:
            continue
        wire = encode(data, spec, codec_row_max)
        if wire is not None and len(wire) < len(best.data):
            best = WireInput(encoding, wire)
    return best


def _only_raw() -> bool:
    setting = os.environ.get(FORMS_SETTING, "").strip().lower()
    if setting not in ("", "smallest", "raw"):
        raise UserError(f"{FORMS_SETTING} is {setting!r}: set it to raw or smallest, or unset it")
    return setting == "raw"
