"""Keyword-spotting frontends: a clip to the model's input tensor, as the deployed firmware does it."""

import hashlib
from pathlib import Path

import numpy as np

from harness.audio.clips import read_clip
from harness.errors import UserError
from harness.model.card import AudioPreprocessing, ModelCard
from harness.paths import cache_dir
from harness.samples import Preparation, Sample
from harness.tensors import TensorSpec


def _generated_frontend(card: ModelCard) -> Path:
    """A microfrontend card's frontend model, written into the cache once per distinct settings."""
    from harness.audio.microfrontend import frontend_model, settings_from_card
    from harness.files import write_bytes_atomically

    pre = card.preprocessing
    data = frontend_model(settings_from_card(pre.frontend, pre.sample_rate, pre.window_samples, str(card.card_path)))
    path = cache_dir() / "frontends" / f"microfrontend-{hashlib.sha256(data).hexdigest()[:16]}.tflite"
    if not path.is_file() or path.read_bytes() != data:  # cheap to write again; never trust an edited copy
        write_bytes_atomically(path, data)
    return path


def frontend_file(card: ModelCard) -> Path:
    """The frontend model of the card: generated from its microfrontend settings, or a model file
    found like any model (cache, mirror, source)."""
    from harness.model import pinned
    from harness.model.fetch import obtain

    front = card.preprocessing.frontend
    if not front:
        raise UserError(f"model card {card.card_path} has no [frontend] table; its pipeline needs one")
    kind = front.get("kind", "file")
    if kind == "microfrontend":
        return _generated_frontend(card)
    return obtain(pinned.frontend_file(card))


class TflmAudioPreprocessor:
    """TFLM's audio preprocessor model (micro_speech's audio_preprocessor_int8.tflite) run on each
    window in turn, in the TFLM host interpreter; a fresh one per clip, so its noise estimate starts
    from zero as in the example's feature generator."""

    def __init__(self, model_path: Path, pre: AudioPreprocessing):
        self.model_data = Path(model_path).read_bytes()
        self.pre = pre

    def _interpreter(self):
        from harness.model.tflm import make_interpreter

        return make_interpreter(self.model_data, 1 << 20)

    def features(self, audio: np.ndarray) -> np.ndarray:
        """frames x features, in the frontend's output type."""
        interpreter = self._interpreter()
        window, stride = self.pre.window_samples, self.pre.stride_samples
        shape = tuple(interpreter.get_input_details(0)["shape"])
        rows = []
        for frame in range(self.pre.frames):
            interpreter.set_input(audio[frame * stride : frame * stride + window].reshape(shape), 0)
            interpreter.invoke()
            rows.append(np.array(interpreter.get_output(0)).reshape(-1))
        return np.stack(rows)


FRONTENDS = {"tflm-audio-preprocessor": TflmAudioPreprocessor}


def make_frontend(card: ModelCard):
    pre = card.preprocessing
    if pre.pipeline not in FRONTENDS:
        raise UserError(f"audio frontend {pre.pipeline!r} is unknown; use one of {', '.join(FRONTENDS)}")
    return FRONTENDS[pre.pipeline](frontend_file(card), pre)


def features_to_tensor(features: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """The frontend's features are the model's input as they are: same count and type, or a fix to the card."""
    if features.size != int(np.prod(spec.shape)) or features.dtype != spec.numpy_dtype:
        raise UserError(
            f"the frontend gives {features.dtype}{list(features.shape)} but the model input is {spec.describe()}; "
            "fix the card's [preprocessing] (window, stride, clip length) or [frontend]"
        )
    return features.reshape(spec.shape)


def keyword_preparation(card: ModelCard, spec: TensorSpec) -> Preparation:
    """Clip to input tensor, through the card's frontend."""
    pre = card.preprocessing
    frontend = make_frontend(card)

    def tensor_of(sample: Sample) -> np.ndarray:
        clip = read_clip(sample.image_path, pre.sample_rate, pre.clip_samples)
        return features_to_tensor(frontend.features(clip), spec)

    frontend_sha = hashlib.sha256(frontend.model_data).hexdigest()
    return Preparation(f"{pre}|frontend {frontend_sha}|{spec}", spec, tensor_of)
