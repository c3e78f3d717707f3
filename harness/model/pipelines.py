"""The preprocessing pipelines and JPEG decoders a model card may name, declared once.

The card validator (harness/model/cards.py) accepts these names and holds a card's interpolation and
crop to its pipeline's; the image preprocessing (harness/eval/preprocess.py) runs the pipeline's
geometry and decodes as its reference does; docs/preprocessing.md lists them (tests/unit/eval/test_preprocess.py
holds the page to this table).
"""

from dataclasses import dataclass

from harness.errors import UserError

# Both references decode JPEG with libjpeg-turbo and fancy upsampling, but tf.io.decode_jpeg defaults to
# the fast integer DCT (JDCT_IFAST) and PIL to the accurate one (JDCT_ISLOW); their pixels differ.
DECODERS = {
    "tf": "as tf.io.decode_jpeg (fast integer DCT)",
    "pil": "as PIL (accurate integer DCT)",
}


@dataclass(frozen=True)
class ImagePipeline:
    name: str
    interpolation: str  # "bilinear" (tf.image.resize, half-pixel centres, no antialias) or "area"
    crop: str  # "none": the whole image stretched to the input size; "centre": shorter side to it, then cut
    decoder: str  # how the pipeline's reference decodes JPEGs (DECODERS); a card's `decoder` overrides it
    reference: str  # whose preprocessing the pipeline reproduces

    @property
    def geometry(self) -> tuple[str, str]:
        return self.interpolation, self.crop


IMAGE_PIPELINES = {
    p.name: p
    for p in (
        ImagePipeline("resize_whole", "bilinear", "none", "pil", "TFLM person_detect"),
        ImagePipeline("wv-challenge", "bilinear", "none", "tf", "Wake Vision challenge and model zoo"),
        ImagePipeline("mlperf-vww", "bilinear", "none", "pil", "MLPerf Tiny VWW (its tooling loads images with PIL)"),
        ImagePipeline("wv-paper", "area", "centre", "tf", "Wake Vision paper / Quickstart"),
    )
}


@dataclass(frozen=True)
class Scaling:
    """Pixel values 0..255 to the model's float input: pixel / divisor + offset (then quantized)."""

    name: str
    divisor: float
    offset: float
    meaning: str


SCALINGS = {
    s.name: s
    for s in (
        Scaling("raw", 1.0, 0.0, "keeps 0..255"),
        Scaling("unit", 255.0, 0.0, "gives 0..1"),
        Scaling("symmetric", 127.5, -1.0, "gives -1..1"),
    )
}

# Keyword spotting: the frontend that turns a clip's windows into feature rows (harness/audio/frontend.py).
AUDIO_PIPELINES = {
    "tflm-audio-preprocessor": "the card's frontend model (TFLM's audio preprocessor, or a generated "
    "microfrontend) run once per window in the TFLM host interpreter",
}


# Inputs that are already what the DUT takes: files read byte for byte (harness/eval/runner_files.py).
FILE_PIPELINES = {
    "mlperf-tiny-files": "the MLPerf Tiny runner's dataset files (a folder with y_labels.csv and the .bin "
    "files its benchmark/evaluation/datasets names), sent byte for byte",
}


def image_pipeline(name: str) -> ImagePipeline:
    if name not in IMAGE_PIPELINES:
        raise UserError(f"preprocessing pipeline {name!r} is unknown; use one of {', '.join(IMAGE_PIPELINES)}")
    return IMAGE_PIPELINES[name]
