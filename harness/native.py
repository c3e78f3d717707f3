"""ctypes view of the device core library built from firmware/core (see setup.py).

The structures mirror firmware/core/hp_device.h and hp_frame.h field for field.
"""

import ctypes
import importlib.util
import os
from functools import cache

from harness.errors import UserError

MAX_DIMS = 6


class TensorInfo(ctypes.Structure):
    _fields_ = (
        ("dtype", ctypes.c_uint8),
        ("rank", ctypes.c_uint8),
        ("dims", ctypes.c_int32 * MAX_DIMS),
        ("scale", ctypes.c_float),
        ("zero_point", ctypes.c_int32),
        ("bytes", ctypes.c_uint32),
    )


class ModelInfo(ctypes.Structure):
    _fields_ = (
        ("input", TensorInfo),
        ("output", TensorInfo),
        ("model_sha256_prefix", ctypes.c_uint8 * 8),
        ("arena_configured", ctypes.c_uint32),
        ("arena_used", ctypes.c_uint32),
    )


class Frame(ctypes.Structure):
    _fields_ = (
        ("type", ctypes.c_uint8),
        ("flags", ctypes.c_uint8),
        ("seq", ctypes.c_uint16),
        ("length", ctypes.c_uint16),
        ("payload", ctypes.POINTER(ctypes.c_uint8)),
        ("crc", ctypes.c_uint32),
    )


class Decoder(ctypes.Structure):
    _fields_ = (
        ("buf", ctypes.POINTER(ctypes.c_uint8)),
        ("cap", ctypes.c_uint32),
        ("have", ctypes.c_uint32),
        ("skipped", ctypes.c_uint32),
    )


class TraceOutput(ctypes.Structure):  # hp_trace_output (firmware/core/hp_trace.h)
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("bytes", ctypes.c_uint32),
        ("dtype", ctypes.c_uint8),
        ("tensor_index", ctypes.c_int32),
    )


class TraceSink(ctypes.Structure):  # hp_trace_sink
    _fields_ = (
        ("mode", ctypes.c_uint8),
        ("operators_run", ctypes.c_uint32),
        ("first_op", ctypes.c_uint16),
        ("records", ctypes.c_uint8),
        ("full", ctypes.c_uint8),
        ("op_index", ctypes.c_uint16),
        ("output", ctypes.c_uint8),
        ("offset", ctypes.c_uint32),
        ("length", ctypes.c_uint32),
        ("tensor_bytes", ctypes.c_uint32),
        ("found", ctypes.c_uint8),
        ("buf", ctypes.c_void_p),
        ("room", ctypes.c_uint32),
        ("used", ctypes.c_uint32),
    )


SIM_INVOKE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
SIM_TRACE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)  # (user, hp_trace_sink *)
SIM_SETUP = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
STREAM_CONFIG_BYTES = 48  # HP_STREAM_CONFIG_BYTES


class Detection(ctypes.Structure):
    _fields_ = (("label", ctypes.c_uint8), ("score", ctypes.c_uint8), ("time_ms", ctypes.c_uint32))


_SIGNATURES = {
    "hp_crc32_update": (ctypes.c_uint32, [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]),
    "hp_decoder_init": (None, [ctypes.POINTER(Decoder), ctypes.c_void_p, ctypes.c_uint32]),
    "hp_decoder_reset": (None, [ctypes.POINTER(Decoder)]),
    "hp_decoder_feed": (
        ctypes.c_int,
        [
            ctypes.POINTER(Decoder),
            ctypes.c_char_p,
            ctypes.c_uint32,
            ctypes.POINTER(ctypes.c_uint32),
            ctypes.POINTER(Frame),
        ],
    ),
    "hp_input_encodings": (ctypes.c_uint32, [ctypes.POINTER(TensorInfo)]),
    "hp_input_state_bytes": (ctypes.c_uint32, []),
    "hp_input_decode": (
        ctypes.c_int32,
        [
            ctypes.c_uint8,
            ctypes.POINTER(TensorInfo),
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_char_p,
            ctypes.c_uint32,
        ],
    ),
    "hp_frame_encode": (
        ctypes.c_uint32,
        [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint8, ctypes.c_uint16, ctypes.c_char_p, ctypes.c_uint16],
    ),
    "sim_runner_create": (
        ctypes.c_void_p,
        [ctypes.POINTER(ModelInfo), ctypes.c_int32, SIM_INVOKE, SIM_SETUP, ctypes.c_void_p],
    ),
    "sim_runner_input": (ctypes.c_void_p, [ctypes.c_void_p]),
    "sim_runner_output": (ctypes.c_void_p, [ctypes.c_void_p]),
    "sim_runner_destroy": (None, [ctypes.c_void_p]),
    "hp_trace_records": (None, [ctypes.c_void_p, ctypes.c_uint16, ctypes.c_void_p, ctypes.c_uint32]),
    "hp_trace_dump": (
        None,
        [ctypes.c_void_p, ctypes.c_uint16, ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p],
    ),
    "hp_trace_operator": (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(TraceOutput), ctypes.c_uint32]),
    "hp_plant_fault": (None, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint8]),
    "sim_board_trace": (None, [ctypes.c_void_p, SIM_TRACE]),
    "sim_board_create": (
        ctypes.c_void_p,
        [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.POINTER(ModelInfo),
            ctypes.c_int32,
            ctypes.c_uint32,
            ctypes.c_uint32,
            ctypes.c_uint32,
            SIM_INVOKE,
            ctypes.c_void_p,
            ctypes.c_void_p,  # the frontend's sim_runner, or None
        ],
    ),
    "sim_stream_create": (ctypes.c_void_p, []),
    "sim_stream_destroy": (None, [ctypes.c_void_p]),
    "sim_stream_start": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]),
    "hp_stream_push": (
        ctypes.c_int32,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(Detection), ctypes.c_uint32],
    ),
    "sim_board_emulate": (None, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]),
    "sim_board_one_slot": (None, [ctypes.c_void_p]),
    "sim_board_use_eembc": (
        ctypes.c_int32,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int32, ctypes.c_int32],
    ),
    "sim_board_reset": (ctypes.c_int32, [ctypes.c_void_p]),
    "sim_board_input": (ctypes.c_void_p, [ctypes.c_void_p]),
    "sim_board_output": (ctypes.c_void_p, [ctypes.c_void_p]),
    "sim_board_poll": (ctypes.c_int32, [ctypes.c_void_p, ctypes.c_uint32]),
    "sim_board_baud": (ctypes.c_uint32, [ctypes.c_void_p]),
    "sim_board_destroy": (None, [ctypes.c_void_p]),
}


@cache
def device_core() -> ctypes.CDLL:
    """The shared library, with argument and result types declared."""
    override = os.environ.get("HARNESS_DEVICECORE_LIB")  # e.g. a sanitizer build, see tests
    spec = importlib.util.find_spec("harness._devicecore")
    if not override and (spec is None or not spec.origin):
        raise UserError("the device core library is not built: reinstall harness with `pip install -e .`")
    lib = ctypes.CDLL(override or spec.origin)
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
