"""The form an input crosses the wire in: the one place that decides it (docs/protocol.md, "Input encodings").

The device announces in HELLO the encodings it decodes into its input tensor (DeviceInfo.input_encodings);
for each sample the host sends the smallest announced form that decodes to exactly the tensor's bytes, and
the raw bytes otherwise. The device core's decoders are firmware/core/hp_input_forms.c, numbered alike;
compressed forms (issue #36 item 2) join ENCODERS."""

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from harness.errors import UserError
from harness.tensors import TensorSpec

# HARNESS_INPUT_FORMS=raw sends every input as its raw bytes, whatever the device decodes: to compare the two, or to
# rule the encoding out while looking into a board. Unset (or "smallest"): the smallest exact form.
FORMS_SETTING = "HARNESS_INPUT_FORMS"


class Encoding(IntEnum):
    RAW = 0
    WIDEN_U8 = 1  # one uint8 per element, widened on the device to the tensor's float32
    WIDEN_I8 = 2  # one int8 per element, widened to float32


@dataclass(frozen=True)
class WireInput:
    """An input as it goes on the wire: its encoding and the bytes LOAD_INPUT carries (offsets count these)."""

    encoding: Encoding
    data: bytes


def _widen_to(narrow: type) -> Callable[[bytes, TensorSpec], bytes | None]:
    """The elements as `narrow` integers when widening them back gives the tensor's bytes exactly (so not
    -0.0, NaN, a fraction or a value outside the type); None otherwise."""

    def encode(data: bytes, spec: TensorSpec) -> bytes | None:
        if spec.numpy_dtype != np.float32:
            return None
        values = np.frombuffer(data, dtype="<f4")
        info = np.iinfo(narrow)
        if not np.all((values >= info.min) & (values <= info.max)):  # NaN fails here too
            return None
        wire = values.astype(narrow)
        return wire.tobytes() if wire.astype("<f4").tobytes() == data else None

    return encode


ENCODERS: dict[Encoding, Callable[[bytes, TensorSpec], bytes | None]] = {
    Encoding.WIDEN_U8: _widen_to(np.uint8),
    Encoding.WIDEN_I8: _widen_to(np.int8),
}


def wire_form(data: bytes, spec: TensorSpec, announced: int) -> WireInput:
    """The smallest form of `data` (the input tensor's bytes) among those the device announced, raw when no
    other holds it exactly."""
    best = WireInput(Encoding.RAW, data)
    if _only_raw():
        return best
    for encoding, encode in ENCODERS.items():
        if not (announced >> encoding) & 1:
            continue
        wire = encode(data, spec)
        if wire is not None and len(wire) < len(best.data):
            best = WireInput(encoding, wire)
    return best


def _only_raw() -> bool:
    setting = os.environ.get(FORMS_SETTING, "").strip().lower()
    if setting not in ("", "smallest", "raw"):
        raise UserError(f"{FORMS_SETTING} is {setting!r}: set it to raw or smallest, or unset it")
    return setting == "raw"
