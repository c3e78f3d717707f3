"""The converter: a float Keras model (Keras 3 `.keras`, legacy `.h5`, or a SavedModel folder) to a
full-integer TFLite model, given calibration tensors. Which samples calibrate and how int8 is checked
against float is eval's part (harness/eval/convert.py).

TensorFlow is needed only here (`pip install 'harness[convert]'`).
"""

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness import reading
from harness.errors import UserError, setting
from harness.extras import require
from harness.model.card import ModelCard
from harness.model.tasks import CARD_TASKS

IO_TYPES = ("int8", "uint8", "float32")
FLOAT_SUFFIXES = (".keras", ".h5")
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


def is_float_model(path: Path) -> bool:
    return path.suffix in FLOAT_SUFFIXES or path.is_dir()


def source_sha256(source: Path) -> str:
    """The sha256 of a model file, or for a SavedModel folder a digest of every file's relative path and
    content, so a re-trained or different model never matches an earlier one's cached conversion."""
    try:
        if not source.is_dir():
            return _file_sha256(source)
        digest = hashlib.sha256()
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            digest.update(path.relative_to(source).as_posix().encode() + b"\0")
            digest.update(_file_sha256(path).encode() + b"\n")
        return digest.hexdigest()
    except OSError as exc:
        raise UserError(f"cannot read model {source} ({exc.strerror}); check the path and its permissions") from exc


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with reading.open_binary(path, reading.FLOAT_MODEL) as stream:  # a FIFO or a device refused, not read forever
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def converter_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for package in ("tensorflow", "tensorflow-cpu"):
        try:
            return f"{package}=={version(package)}"
        except PackageNotFoundError:
            continue
    return "no-tensorflow"


@dataclass(frozen=True)
class FloatModel:
    """A loaded float model: its converter factory and its float predict function."""

    source: Path
    make_converter: Callable
    predict: Callable[[np.ndarray], np.ndarray]

    def predict_quietly(self, tensor: np.ndarray) -> np.ndarray:
        with quiet():
            return np.asarray(self.predict(np.asarray(tensor, dtype=np.float32)), dtype=np.float32)


@contextlib.contextmanager
def quiet():
    """TensorFlow and its converter write to the process's stdout and stderr directly."""
    sys.stdout.flush()
    sys.stderr.flush()
    warnings = contextlib.ExitStack()
    import warnings as warnings_module

    warnings.enter_context(warnings_module.catch_warnings())
    warnings_module.simplefilter("ignore")
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            warnings.close()


def _tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with quiet():
        return require("tensorflow", "converting")


def load_float_model(path: Path) -> FloatModel:
    """The float model at path, ready to predict and to convert (TensorFlow kept quiet meanwhile)."""
    with quiet():
        return _load_float_model(path)


def _load_float_model(path: Path) -> FloatModel:
    tf = _tensorflow()
    if path.is_dir():
        try:
            loaded = tf.saved_model.load(str(path))
            signature = loaded.signatures["serving_default"]
        except Exception as exc:
            raise UserError(
                f"SavedModel {path} cannot be loaded ({type(exc).__name__}); "
                "export it again with a serving_default signature, or pass a .keras or .h5 file"
            ) from exc
        return FloatModel(
            path,
            lambda: tf.lite.TFLiteConverter.from_saved_model(str(path)),
            lambda x: next(iter(signature(tf.constant(x)).values())).numpy(),
        )
    if not path.is_file():
        raise UserError(f"model {path} does not exist; pass a .keras or .h5 file or a SavedModel folder")
    model = None
    try:
        model = require("keras", "converting").models.load_model(str(path), compile=False)
    except Exception:  # Keras 3 cannot read Keras 2 .h5 files such as the MLPerf Tiny VWW one
        tf_keras = require("tf_keras", f"{path.name} (Keras 2 format)")
        try:
            model = tf_keras.models.load_model(str(path), compile=False)
        except Exception as exc:
            raise UserError(
                f"{path} cannot be loaded by Keras 3 or tf-keras ({type(exc).__name__}); "
                "pass a .keras or .h5 model or a SavedModel folder"
            ) from exc
    return FloatModel(
        path, lambda: tf.lite.TFLiteConverter.from_keras_model(model), lambda x: np.asarray(model(x, training=False))
    )


def check_convertible(source: Path | None, card: ModelCard, out: Path) -> None:
    """The mistakes found before TensorFlow loads and converts anything, each in one line (source None:
    the card's own model, not fetched yet)."""
    if CARD_TASKS[card.task].inputs != "image":
        raise UserError(
            f"card {card.name} is a {card.task.replace('_', ' ')} card; convert handles image classification "
            f"cards only: pass {setting('card')} with an image card (for example mlperf_tiny_vww_float)"
        )
    if out.is_dir():
        raise UserError(f"{setting('out')} {out} is a directory; pass the path of the .tflite file to write")
    if out.parent.exists() and not out.parent.is_dir():
        raise UserError(f"{setting('out')} {out}: {out.parent} is not a directory; pass a path in an existing folder")
    if source is None:
        return
    if not source.exists():
        raise UserError(f"model {source} does not exist; pass a .keras or .h5 file or a SavedModel folder")
    if not source.is_dir():
        reading.check_regular(source, reading.FLOAT_MODEL)
    if source.is_dir() and not any((source / name).is_file() for name in SAVED_MODEL_FILES):
        raise UserError(
            f"model folder {source} is not a SavedModel (it has no saved_model.pb); "
            "pass a SavedModel folder or a .keras or .h5 file"
        )


def check_input_fits(model: FloatModel, example, card: ModelCard) -> None:
    """The float model must take what the card's preprocessing makes, or calibration means nothing."""
    try:
        model.predict_quietly(example)
    except Exception as exc:
        shape = list(np.shape(example))
        raise UserError(
            f"{model.source.name} does not take the input {shape} that card {card.name}'s preprocessing makes "
            f"({type(exc).__name__}); pass the {setting('card')} whose preprocessing matches the model"
        ) from exc


def quantize(model: FloatModel, calibration: Sequence[np.ndarray], io: str) -> bytes:
    """The full-integer TFLite flatbuffer of `model`, its ranges calibrated on `calibration` (float
    tensors shaped as the model's input); `io` is the type of the model's input and output."""
    if io not in IO_TYPES:
        raise UserError(f"{setting('io')} {io} is unknown; use one of {', '.join(IO_TYPES)}")
    tf = _tensorflow()

    def representative():
        for tensor in calibration:
            yield [np.asarray(tensor, dtype=np.float32)]

    with quiet():
        converter = model.make_converter()
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = {"int8": tf.int8, "uint8": tf.uint8, "float32": tf.float32}[io]
        converter.inference_output_type = converter.inference_input_type
        try:
            return converter.convert()
        except Exception as exc:  # the converter's own message names the operator it could not quantize
            detail = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__
            raise UserError(f"{model.source.name} does not convert to full int8: {detail}") from exc


def float_tflite(model: FloatModel) -> bytes:
    """The float model as a float TFLite flatbuffer (no quantization): the float side of a comparison with its
    int8 conversion, whose tensors the same converter names alike."""
    with quiet():
        try:
            return model.make_converter().convert()
        except Exception as exc:
            detail = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__
            raise UserError(f"{model.source.name} does not convert to float TFLite: {detail}") from exc
