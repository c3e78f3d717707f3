"""Model cards: models/*.toml say where a model comes from and how to feed and read it. This module holds
the card's values; harness/model/cards.py reads and checks a card file into them (its declared shape:
card_schema.py), harness/model/card_fit.py checks a card against its model file, and harness/model/tasks.py
declares the tasks a card may name."""

from dataclasses import dataclass
from pathlib import Path

OUTPUT_KINDS = ("softmax", "logits", "sigmoid", "reconstruction_mse")
# reconstruction_mse: the result is one score, the mean squared error of an autoencoder's reconstruction
# of its float input (MLPerf Tiny ad01; harness/model/dut.py computes it as the reference DUT does)


@dataclass(frozen=True)
class Preprocessing:
    pipeline: str  # "resize_whole": bilinear stretch of the whole image, no crop
    size: tuple[int, int]  # height, width
    color: str  # "rgb" or "grayscale"
    interpolation: str  # the pipeline's: a card may only name it (harness/model/pipelines.py)
    crop: str
    scaling: str  # "raw" keeps 0..255; "unit" gives 0..1; "symmetric" gives -1..1
    dtype: str
    rounding: str = "round"  # "truncate" reproduces a plain float-to-uint8 cast
    decoder: str | None = None  # JPEG decoding as "tf" or "pil" does it; None: the pipeline's reference


@dataclass(frozen=True)
class AudioPreprocessing:
    """Keyword spotting: 16-bit mono clips, cut into windows a frontend turns into feature rows."""

    pipeline: str  # the frontend, e.g. "tflm-audio-preprocessor" (a TFLM model run once per window)
    sample_rate: int
    clip_ms: int
    window_ms: int
    stride_ms: int
    frontend: dict | None = None  # the frontend model file: name, sha256, url, mirror_path

    @property
    def window_samples(self) -> int:
        return self.sample_rate * self.window_ms // 1000

    @property
    def stride_samples(self) -> int:
        return self.sample_rate * self.stride_ms // 1000

    @property
    def clip_samples(self) -> int:
        return self.sample_rate * self.clip_ms // 1000

    @property
    def frames(self) -> int:
        return (self.clip_samples - self.window_samples) // self.stride_samples + 1


@dataclass(frozen=True)
class FilePreprocessing:
    """Inputs already made: each dataset file holds what the DUT takes (FILE_PIPELINES)."""

    pipeline: str  # "mlperf-tiny-files"


@dataclass(frozen=True)
class OutputMeaning:
    kind: str
    positive_index: int
    labels: tuple[str, ...]
    threshold: float = 0.5
    silence_label: str | None = None  # keyword spotting: the class of clips without speech
    unknown_label: str | None = None  # keyword spotting: the class of words that are not keywords


@dataclass(frozen=True)
class EembcDut:
    """What MLPerf Tiny / EEMBC DUT firmware running this model reports and takes (`--protocol eembc`)."""

    model: str  # what its `profile` answers as m-model-[…]: vww01, kws01, ic01, ad01
    input: str = "model"  # "model": the model's input tensor as is; "uint8": an int8 input sent as v + 128
    # (the reference VWW and IC th_load_tensor subtract 128 from the bytes they are sent); "float32": float
    # features the DUT quantizes itself (the reference AD th_load_tensor), with output kind reconstruction_mse


EEMBC_INPUTS = ("model", "uint8", "float32")
# What each reference DUT's th_load_tensor takes: the MLPerf Tiny runner's input files for the benchmark.
REFERENCE_INPUTS = {
    "vww01": (27648, "96x96x3 uint8"),
    "kws01": (490, "49x10 int8"),
    "ic01": (3072, "32x32x3 uint8"),
    "ad01": (2560, "640 float32"),
}


@dataclass(frozen=True)
class ModelCard:
    name: str
    title: str
    task: str
    licence: str
    file_name: str
    sha256: str | None
    source: dict
    mirror_path: str | None
    preprocessing: Preprocessing | AudioPreprocessing | FilePreprocessing
    output: OutputMeaning
    card_path: Path
    notes: str = ""
    caveat: str = ""  # what results with this card cannot claim; printed and stored with every run
    streaming: dict | None = None  # keyword streaming: the recognizer's settings (harness/streaming)
    eembc: EembcDut | None = None  # the MLPerf Tiny DUT firmware of this model, where there is one
