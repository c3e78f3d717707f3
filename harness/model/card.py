"""Model cards: models/*.toml say where a model comes from and how to feed and read it."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError
from harness.paths import models_dir

DEFAULT_MODEL = "mlperf_tiny_vww"
OUTPUT_KINDS = ("softmax", "logits", "sigmoid")
TASKS = ("image_classification", "keyword_spotting")


@dataclass(frozen=True)
class Preprocessing:
    pipeline: str  # "resize_whole": bilinear stretch of the whole image, no crop
    size: tuple[int, int]  # height, width
    color: str  # "rgb" or "grayscale"
    interpolation: str
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
class OutputMeaning:
    kind: str
    positive_index: int
    labels: tuple[str, ...]
    threshold: float = 0.5
    silence_label: str | None = None  # keyword spotting: the class of clips without speech
    unknown_label: str | None = None  # keyword spotting: the class of words that are not keywords


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
    preprocessing: Preprocessing | AudioPreprocessing
    output: OutputMeaning
    card_path: Path
    notes: str = ""
    caveat: str = ""  # what results with this card cannot claim; printed and stored with every run
    streaming: dict | None = None  # keyword streaming: the recognizer's settings (harness/stream)


def _image_preprocessing(pre: dict) -> Preprocessing:
    return Preprocessing(
        pipeline=pre["pipeline"],
        size=(int(pre["size"][0]), int(pre["size"][1])),
        color=pre["color"],
        interpolation=pre.get("interpolation", "bilinear"),
        crop=pre.get("crop", "none"),
        scaling=pre["scaling"],
        dtype=pre["dtype"],
        rounding=pre.get("rounding", "round"),
        decoder=pre.get("decoder"),
    )


def _audio_preprocessing(pre: dict, frontend: dict | None) -> AudioPreprocessing:
    return AudioPreprocessing(
        pipeline=pre["pipeline"],
        sample_rate=int(pre["sample_rate"]),
        clip_ms=int(pre["clip_ms"]),
        window_ms=int(pre["window_ms"]),
        stride_ms=int(pre["stride_ms"]),
        frontend=frontend,
    )


def _caveat(text) -> str:
    if not isinstance(text, str):
        raise ValueError("caveat must be text")
    return " ".join(text.split())


def _read(path: Path) -> str:
    if path.is_dir():
        raise UserError(f"model card {path} is a directory; pass the card's .toml file")
    try:
        return path.read_text()
    except OSError as exc:
        raise UserError(f"cannot read model card {path} ({exc.strerror or exc}); check its permissions") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"model card {path} is not UTF-8 text; pass a .toml card") from exc


def _parse(path: Path) -> ModelCard:
    text = _read(path)
    try:
        data = tomllib.loads(text)
        pre = data["preprocessing"]
        out = data["output"]
        audio = data["task"] == "keyword_spotting"
        card = ModelCard(
            name=data["name"],
            title=data.get("title", data["name"]),
            task=data["task"],
            licence=data.get("licence", "unknown"),
            file_name=data["file"]["name"],
            sha256=data["file"].get("sha256"),
            source=data["source"],
            mirror_path=data["source"].get("mirror_path"),
            preprocessing=_audio_preprocessing(pre, data.get("frontend")) if audio else _image_preprocessing(pre),
            output=OutputMeaning(
                kind=out["kind"],
                positive_index=int(out["positive_index"]),
                labels=tuple(out["labels"]),
                threshold=float(out.get("threshold", 0.5)),
                silence_label=out.get("silence_label"),
                unknown_label=out.get("unknown_label"),
            ),
            card_path=path,
            notes=data.get("notes", ""),
            caveat=_caveat(data.get("caveat", "")),
            streaming=data.get("streaming"),
        )
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise UserError(f"model card {path} is invalid ({exc}); compare it with models/{DEFAULT_MODEL}.toml") from exc
    if card.task not in TASKS:
        raise UserError(f"model card {path}: task must be one of {', '.join(TASKS)}")
    if card.output.kind not in OUTPUT_KINDS:
        raise UserError(f"model card {path}: output.kind must be one of {', '.join(OUTPUT_KINDS)}")
    return card


def all_cards() -> dict[str, ModelCard]:
    return {c.name: c for c in map(_parse, sorted(models_dir().glob("*.toml")))}


def load_card(spec: str) -> ModelCard:
    """A card by name (models/NAME.toml) or by the path of a .toml file."""
    if spec.endswith(".toml") or "/" in spec:
        path = Path(spec)
        if not path.exists():
            raise UserError(f"model card {spec} does not exist; pass a card name or an existing .toml path")
        return _parse(path)
    path = models_dir() / f"{spec}.toml"
    if path.is_file():
        return _parse(path)
    names = sorted(p.stem for p in models_dir().glob("*.toml"))
    raise UserError(f"unknown model {spec!r}; valid models: {', '.join(names)} (or a path to a card .toml)")
