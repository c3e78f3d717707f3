"""HARNESS_PLANT_FAULT_OP, a test and debug aid (docs/debug.md): which operator a board harness starts perturbs.
Read in the process that starts the board, before anything starts; light, since every board start reads it."""

import os
from pathlib import Path

from harness import reading
from harness.errors import UserError

PLANT_FAULT_ENV = "HARNESS_PLANT_FAULT_OP"


def planted_fault_op(model_path: Path | None) -> int:
    """The operator of the model's main graph HARNESS_PLANT_FAULT_OP names, or -1 (unset). Read where the board
    process is started, so a bad value is refused in one line before anything starts."""
    text = os.environ.get(PLANT_FAULT_ENV, "").strip()
    if not text:
        return -1
    if not text.isdigit():
        raise UserError(f"{PLANT_FAULT_ENV}={text!r} is not an operator index; set a whole number or unset it")
    if model_path is None:
        raise UserError(f"{PLANT_FAULT_ENV} perturbs a model's operator, and this board runs none; unset it")
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema  # only with a fault set

    data = reading.read_bytes(Path(model_path), reading.MODEL)
    operators = len(schema.ModelT.InitFromPackedBuf(bytearray(data), 0).subgraphs[0].operators)
    if int(text) >= operators:
        raise UserError(
            f"{PLANT_FAULT_ENV}={text}: the model has {operators} operators (0 to {operators - 1}); name one of them"
        )
    return int(text)
