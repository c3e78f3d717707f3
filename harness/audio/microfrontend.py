"""A TFLM frontend model built from microfrontend settings.

TensorFlow's microfrontend (tensorflow/lite/experimental/microfrontend) is the feature generator
many keyword models were trained with. TFLM's signal library has its stages as operators
(SignalWindow, SignalFftAutoScale, SignalRfft, SignalEnergy, SignalFilterBank,
SignalFilterBankSquareRoot, SignalFilterBankLog), so a card can name microfrontend settings and
the harness writes the frontend as a small TFLM model: the firmware and the host run it per
window exactly as they run micro_speech's audio_preprocessor_int8.tflite.

Built here: the stateless path (no noise reduction, no PCAN), whose output per window depends on
that window alone. The log-scaled energies become the model's float input times `scale`.
The window and filterbank tables are computed as microfrontend's window_util.c and
filterbank_util.c compute them (float32, libm's log1pf, weights rounded), so the features equal
TensorFlow's audio_microfrontend op with its noise reduction off (tests/unit/audio/test_microfrontend.py).
"""

import ctypes
import ctypes.util
import math
from dataclasses import dataclass
from functools import cache

import flatbuffers
import numpy as np
from flatbuffers import flexbuffers
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from harness.errors import UserError

WINDOW_BITS = 12  # microfrontend's kFrontendWindowBits
FILTERBANK_BITS = 12  # kFilterbankBits
INDEX_ALIGNMENT = 2  # kFilterbankIndexAlignment (4 bytes) in int16 indices
CHANNEL_BLOCK = 4  # kFilterbankChannelBlockSize
KNOWN_KEYS = {"kind", "channels", "lower_band_hz", "upper_band_hz", "log_scale_shift", "scale"}
# Above 10 the log energies can pass 32767, where TFLM's SignalFilterBankLog clamps and
# microfrontend (uint16) does not.
MAX_LOG_SCALE_SHIFT = 10


@dataclass(frozen=True)
class MicrofrontendSettings:
    sample_rate: int
    window_samples: int
    channels: int
    lower_band_hz: float
    upper_band_hz: float
    log_scale_shift: int
    scale: float  # model input = log-scaled energy x scale

    @property
    def fft_size(self) -> int:
        return fft_size_for(self.window_samples)


def fft_size_for(window_samples: int) -> int:
    """The power-of-two FFT a window of this many samples takes."""
    return 1 << math.ceil(math.log2(window_samples))


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return (_whole(value) or isinstance(value, float)) and math.isfinite(value)


def settings_from_card(frontend: dict, sample_rate: int, window_samples: int, where: str) -> MicrofrontendSettings:
    unknown = set(frontend) - KNOWN_KEYS
    if unknown:
        raise UserError(
            f"{where}: [frontend] keys {', '.join(sorted(unknown))} are not microfrontend settings "
            f"(known: {', '.join(sorted(KNOWN_KEYS - {'kind'}))}); noise reduction and PCAN are not built"
        )
    missing = [key for key in ("channels", "upper_band_hz", "scale") if key not in frontend]
    if missing:
        raise UserError(f"{where}: a microfrontend [frontend] needs {', '.join(missing)}")
    channels, shift = frontend["channels"], frontend.get("log_scale_shift", 6)
    lower, upper, scale = frontend.get("lower_band_hz", 125.0), frontend["upper_band_hz"], frontend["scale"]
    if not _whole(channels) or channels < 1:
        raise UserError(f"{where}: [frontend] channels must be a whole number >= 1, not {channels!r}")
    if not _whole(shift) or not 0 <= shift <= MAX_LOG_SCALE_SHIFT:
        raise UserError(f"{where}: [frontend] log_scale_shift must be a whole number 0..{MAX_LOG_SCALE_SHIFT}")
    if not (_number(lower) and _number(upper) and 0 <= lower < upper <= sample_rate / 2):
        raise UserError(f"{where}: [frontend] needs 0 <= lower_band_hz < upper_band_hz <= {sample_rate / 2:g} Hz")
    if not (_number(scale) and scale > 0):
        raise UserError(f"{where}: [frontend] scale must be a finite number > 0, not {scale!r}")
    if window_samples < 1 or not 64 <= fft_size_for(window_samples) <= 2048:
        raise UserError(f"{where}: a window of {window_samples} samples needs an FFT of 64..2048 points; fix window_ms")
    return MicrofrontendSettings(sample_rate, window_samples, channels, float(lower), float(upper), shift, float(scale))


@cache
def _log1pf():
    """libm's single-precision log1p: the one microfrontend's FreqToMel calls."""
    function = ctypes.CDLL(ctypes.util.find_library("m")).log1pf
    function.argtypes, function.restype = [ctypes.c_float], ctypes.c_float
    return function


def _freq_to_mel(freq) -> np.float32:
    """filterbank_util.c: 1127.0f * log1pf(freq / 700.0f), all in float32."""
    return np.float32(1127.0) * np.float32(_log1pf()(float(np.float32(freq) / np.float32(700.0))))


def hann_window(length: int) -> np.ndarray:
    """window_util.c as in TensorFlow: a float argument step, the cosine in double, a float value."""
    step = np.float64(np.float32(2 * np.pi / length))
    values = (0.5 - 0.5 * np.cos(step * (np.arange(length) + 0.5))).astype(np.float32)
    return np.floor(values.astype(np.float64) * (1 << WINDOW_BITS) + 0.5).astype(np.int16)


@dataclass(frozen=True)
class Filterbank:
    start_index: int
    end_index: int
    weights: np.ndarray
    unweights: np.ndarray
    channel_frequency_starts: np.ndarray
    channel_weight_starts: np.ndarray
    channel_widths: np.ndarray


def filterbank(settings: MicrofrontendSettings, rounded: bool = True) -> Filterbank:
    """The mel filterbank tables as microfrontend's FilterbankPopulateState computes them (float32).
    Its weights are rounded; TFLM's python generator (`rounded=False`) truncates them."""
    channels = settings.channels + 1  # one more: the last channel only supplies the unweights
    spectrum_size = settings.fft_size // 2 + 1
    mel_low, mel_high = _freq_to_mel(settings.lower_band_hz), _freq_to_mel(settings.upper_band_hz)
    spacing = np.float32((mel_high - mel_low) / np.float32(channels))
    centers = [np.float32(mel_low + spacing * np.float32(i + 1)) for i in range(channels)]
    hz_per_bin = np.float32(np.float32(0.5 * settings.sample_rate) / np.float32(spectrum_size - 1))
    start_index = int(np.float32(1.5) + np.float32(settings.lower_band_hz) / hz_per_bin)

    freq_starts = np.zeros(channels, np.int16)
    weight_starts = np.zeros(channels, np.int16)
    widths = np.zeros(channels, np.int16)
    actual_starts, actual_widths = [], []
    freq_index, weight_index, zeros_placed = start_index, 0, False
    for chan in range(channels):
        first = freq_index
        while _freq_to_mel(np.float32(freq_index) * hz_per_bin) <= centers[chan]:
            freq_index += 1
        width = freq_index - first
        actual_starts.append(first)
        actual_widths.append(width)
        if width == 0:  # an empty channel multiplies a block of zero weights kept at the front
            freq_starts[chan], weight_starts[chan], widths[chan] = 0, 0, CHANNEL_BLOCK
            if not zeros_placed:
                zeros_placed = True
                weight_starts[:chan] += CHANNEL_BLOCK
                weight_index += CHANNEL_BLOCK
        else:
            aligned = first // INDEX_ALIGNMENT * INDEX_ALIGNMENT
            padded = ((first - aligned + width - 1) // CHANNEL_BLOCK + 1) * CHANNEL_BLOCK
            freq_starts[chan], weight_starts[chan], widths[chan] = aligned, weight_index, padded
            weight_index += padded

    weights = np.zeros(weight_index, np.int16)
    unweights = np.zeros(weight_index, np.int16)
    end_index = 0
    for chan in range(channels):
        below = mel_low if chan == 0 else centers[chan - 1]
        frequency = actual_starts[chan]
        offset = frequency - int(freq_starts[chan])
        for j in range(actual_widths[chan]):
            mel = _freq_to_mel(np.float32(frequency) * hz_per_bin)
            weight = np.float32(np.float32(centers[chan] - mel) / np.float32(centers[chan] - below))
            slot = int(weight_starts[chan]) + offset + j
            half = np.float32(0.5) if rounded else np.float32(0.0)
            weights[slot] = math.floor(weight * np.float32(1 << FILTERBANK_BITS) + half)
            unweights[slot] = math.floor((np.float32(1.0) - weight) * np.float32(1 << FILTERBANK_BITS) + half)
            frequency += 1
        end_index = max(end_index, frequency)
    if end_index >= spectrum_size:
        raise UserError("the filterbank's upper band reaches beyond the spectrum; lower upper_band_hz")
    return Filterbank(start_index, end_index, weights, unweights, freq_starts, weight_starts, widths)


class _GraphWriter:
    """Tensors and operators of one subgraph, written with the TFLite schema's object API."""

    def __init__(self):
        self.model = schema.ModelT()
        self.model.version = 3
        self.model.description = "harness microfrontend"
        self.model.buffers = [schema.BufferT()]
        self.model.operatorCodes = []
        self.graph = schema.SubGraphT()
        self.graph.tensors, self.graph.operators = [], []

    def tensor(self, name: str, shape: list[int], dtype: int, data: np.ndarray | None = None) -> int:
        tensor = schema.TensorT()
        tensor.name, tensor.shape, tensor.type, tensor.buffer = name.encode(), shape, dtype, 0
        if data is not None:
            buffer = schema.BufferT()
            buffer.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
            self.model.buffers.append(buffer)
            tensor.buffer = len(self.model.buffers) - 1
        self.graph.tensors.append(tensor)
        return len(self.graph.tensors) - 1

    def _opcode(self, builtin: int, custom: str | None) -> int:
        for index, code in enumerate(self.model.operatorCodes):
            if code.builtinCode == builtin and (code.customCode or b"").decode() == (custom or ""):
                return index
        code = schema.OperatorCodeT()
        code.builtinCode, code.deprecatedBuiltinCode = builtin, min(builtin, 127)
        code.customCode, code.version = (custom.encode() if custom else None), 1
        self.model.operatorCodes.append(code)
        return len(self.model.operatorCodes) - 1

    def op(
        self,
        inputs: list[int],
        outputs: list[int],
        custom: str | None = None,
        options: dict | None = None,
        builtin: int = schema.BuiltinOperator.CUSTOM,
        builtin_options=None,
    ) -> None:
        operator = schema.OperatorT()
        operator.opcodeIndex = self._opcode(builtin, custom)
        operator.inputs, operator.outputs = inputs, outputs
        if custom:
            operator.customOptions = np.frombuffer(flexbuffers.Dumps(options or {}), np.uint8)
            operator.customOptionsFormat = schema.CustomOptionsFormat.FLEXBUFFERS
        if builtin_options is not None:
            operator.builtinOptionsType, operator.builtinOptions = builtin_options
        self.graph.operators.append(operator)

    def finish(self, inputs: list[int], outputs: list[int]) -> bytes:
        self.graph.inputs, self.graph.outputs = inputs, outputs
        self.model.subgraphs = [self.graph]
        builder = flatbuffers.Builder(1 << 14)
        builder.Finish(self.model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def frontend_model(settings: MicrofrontendSettings) -> bytes:
    """The .tflite: int16 window in, `channels` float32 model-input values out."""
    T = schema.TensorType
    bank = filterbank(settings)
    n, fft, channels = settings.window_samples, settings.fft_size, settings.channels
    w = _GraphWriter()
    audio = w.tensor("audio_window", [n], T.INT16)
    windowed = w.tensor("window", [n], T.INT16)
    w.op([audio, w.tensor("hann", [n], T.INT16, hann_window(n))], [windowed], "SignalWindow", {"shift": WINDOW_BITS})
    scaled, shift = w.tensor("fft_auto_scale", [n], T.INT16), w.tensor("fft_shift", [], T.INT32)
    w.op([windowed], [scaled, shift], "SignalFftAutoScale")
    spectrum = w.tensor("rfft", [fft + 2], T.INT16)
    w.op([scaled], [spectrum], "SignalRfft", {"T": T.INT16, "fft_length": fft})
    # The filterbank reads whole blocks of bins, which near the Nyquist band pass the spectrum's
    # end (times zero weights): the tensor is made long enough for them to stay inside it.
    reach = int(np.max(bank.channel_frequency_starts.astype(int) + bank.channel_widths))
    energy = w.tensor("energy", [max(fft // 2 + 1, reach)], T.UINT32)
    w.op([spectrum], [energy], "SignalEnergy", {"end_index": bank.end_index, "start_index": bank.start_index})
    tables = [
        w.tensor("weights", [len(bank.weights)], T.INT16, bank.weights),
        w.tensor("unweights", [len(bank.unweights)], T.INT16, bank.unweights),
        w.tensor("channel_frequency_starts", [channels + 1], T.INT16, bank.channel_frequency_starts),
        w.tensor("channel_weight_starts", [channels + 1], T.INT16, bank.channel_weight_starts),
        w.tensor("channel_widths", [channels + 1], T.INT16, bank.channel_widths),
    ]
    banked = w.tensor("filter_bank", [channels], T.UINT64)
    w.op([energy, *tables], [banked], "SignalFilterBank", {"num_channels": channels})
    rooted = w.tensor("filter_bank_square_root", [channels], T.UINT32)
    w.op([banked, shift], [rooted], "SignalFilterBankSquareRoot")
    logged = w.tensor("filter_bank_log", [channels], T.INT16)
    correction = int(math.log2(fft)) - FILTERBANK_BITS // 2
    w.op(
        [rooted],
        [logged],
        "SignalFilterBankLog",
        {"input_correction_bits": correction, "output_scale": 1 << settings.log_scale_shift},
    )
    as_float = w.tensor("log_energy", [channels], T.FLOAT32)
    w.op([logged], [as_float], builtin=schema.BuiltinOperator.CAST)
    features = w.tensor("features", [channels], T.FLOAT32)
    scale = w.tensor("scale", [], T.FLOAT32, np.array(settings.scale, np.float32))
    mul = schema.MulOptionsT()
    w.op(
        [as_float, scale],
        [features],
        builtin=schema.BuiltinOperator.MUL,
        builtin_options=(schema.BuiltinOptions.MulOptions, mul),
    )
    return w.finish([audio], [features])
