"""`harness convert`: a float Keras model (Keras 3 `.keras`, legacy `.h5`, or a SavedModel folder) to
a full-integer TFLite model, calibrated on benchmark samples through the model card's preprocessing,
then checked: every operator must have a TFLM kernel, and int8 must agree with float on held-out data.

TensorFlow is needed only here (`pip install tensorflow-cpu tf-keras`).
"""

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import UserError
from harness.eval.inputs import image_preparation, prepare_inputs
from harness.model.card import ModelCard
from harness.model.deployable import missing_tflm_kernels
from harness.model.tflite_file import read_tflite

IO_TYPES = ("int8", "uint8", "float32")
FLOAT_SUFFIXES = (".keras", ".h5")


def is_float_model(path: Path) -> bool:
    return path.suffix in FLOAT_SUFFIXES or path.is_dir()


def converted_for_eval(source: Path, card: ModelCard, dataset) -> Path:
    """The card's float model converted with the defaults (int8, 50 calibration samples), cached by
    source, card and calibration data, so `harness eval` runs float cards like any other."""
    import hashlib

    from harness.eval.subsets import SUBSETS
    from harness.paths import cache_dir

    key = hashlib.sha256(f"{card.sha256}|{card.preprocessing}|{dataset.csv_sha256}".encode()).hexdigest()[:16]
    out = cache_dir() / "converted" / f"{card.name}-{key}.tflite"
    if not out.is_file():
        print(f"harness: converting {card.name} to int8 once (cached)", file=sys.stderr)
        convert(source, card, dataset, [SUBSETS["all"]], 50, "int8", out)
    return out


@contextlib.contextmanager
def _quiet():
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
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        with _quiet():
            import tensorflow as tf
    except ImportError as exc:
        raise UserError("converting needs TensorFlow: pip install tensorflow-cpu tf-keras") from exc
    return tf


def _load(path: Path):
    """(converter factory, float predict function) for the model at path."""
    tf = _tensorflow()
    if path.is_dir():
        loaded = tf.saved_model.load(str(path))
        signature = loaded.signatures["serving_default"]
        return (lambda: tf.lite.TFLiteConverter.from_saved_model(str(path))), (
            lambda x: next(iter(signature(tf.constant(x)).values())).numpy()
        )
    if not path.is_file():
        raise UserError(f"model {path} does not exist; pass a .keras or .h5 file or a SavedModel folder")
    model = None
    try:
        import keras

        model = keras.models.load_model(str(path), compile=False)
    except Exception:  # Keras 3 cannot read Keras 2 .h5 files such as the MLPerf Tiny VWW one
        try:
            import tf_keras

            model = tf_keras.models.load_model(str(path), compile=False)
        except ImportError as exc:
            raise UserError(f"{path.name} needs tf-keras to load (Keras 2 format): pip install tf-keras") from exc
        except Exception as exc:
            raise UserError(
                f"{path} cannot be loaded by Keras 3 or tf-keras ({type(exc).__name__}); "
                "pass a .keras or .h5 model or a SavedModel folder"
            ) from exc
    return (lambda: tf.lite.TFLiteConverter.from_keras_model(model)), (lambda x: np.asarray(model(x, training=False)))


@dataclass
class Conversion:
    out: Path
    calibration_samples: int
    held_out: int
    agreement: float
    float_accuracy: float
    int8_accuracy: float


def convert(source: Path, card: ModelCard, dataset, subsets, samples: int, io: str, out: Path) -> Conversion:
    from harness.eval.subsets import select_samples

    if io not in IO_TYPES:
        raise UserError(f"--io {io} is unknown; use one of {', '.join(IO_TYPES)}")
    tf = _tensorflow()
    pool = select_samples(dataset.samples, subsets)
    if len(pool) < 4:
        raise UserError(f"{dataset.name} has {len(pool)} samples in the chosen subsets; converting needs at least 4")
    calibration, held_out = pool[: min(samples, len(pool) // 2)], pool[min(samples, len(pool) // 2) :]
    with _quiet():
        make_converter, predict_float = _load(source)
    height, width = card.preprocessing.size
    channels = 1 if card.preprocessing.color == "grayscale" else 3
    from harness.tensors import TensorSpec

    float_spec = TensorSpec(1, (1, height, width, channels), 0.0, 0, 4 * height * width * channels)
    calibration_inputs = prepare_inputs(dataset, calibration, image_preparation(card.preprocessing, float_spec)).tensors
    held_inputs = prepare_inputs(dataset, held_out, image_preparation(card.preprocessing, float_spec))

    def representative():
        for tensor in calibration_inputs:
            yield [np.asarray(tensor, dtype=np.float32)]

    with _quiet():
        converter = make_converter()
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = {"int8": tf.int8, "uint8": tf.uint8, "float32": tf.float32}[io]
        converter.inference_output_type = converter.inference_input_type
        try:
            data = converter.convert()
        except Exception as exc:  # the converter's own message names the operator it could not quantize
            detail = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__
            raise UserError(f"{source.name} does not convert to full int8: {detail}") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    partial.write_bytes(data)
    missing = missing_tflm_kernels(partial)
    if missing:
        partial.unlink()
        raise UserError(f"{source.name}: TFLM has no kernel for {', '.join(missing)}; change those layers")
    partial.replace(out)
    return _evaluate(out, card, held_inputs, predict_float, len(calibration))


def _evaluate(out: Path, card: ModelCard, held, predict_float, calibrated: int) -> Conversion:
    from harness.eval.outputs import predict
    from harness.eval.preprocess import to_tensor
    from harness.model.references import TflmReference

    quantized = read_tflite(out)
    reference = TflmReference(quantized)
    agree = float_ok = int8_ok = 0
    for sample, tensor in zip(held.samples, held.tensors, strict=True):
        real = np.asarray(tensor, dtype=np.float32)
        with _quiet():
            float_out = np.asarray(predict_float(real), dtype=np.float32).ravel()
        int8_raw = reference.run(to_tensor(real.reshape(real.shape[1:]), quantized.input))
        float_prediction = predict(float_out.tobytes(), _float32(float_out.size), card.output)[0]
        int8_prediction = predict(int8_raw, quantized.output, card.output)[0]
        label = 1 if sample.person == -1 else sample.person
        agree += float_prediction == int8_prediction
        float_ok += float_prediction == label
        int8_ok += int8_prediction == label
    n = max(1, len(held.samples))
    return Conversion(out, calibrated, len(held.samples), agree / n, float_ok / n, int8_ok / n)


def _float32(size: int):
    from harness.tensors import TensorSpec

    return TensorSpec(1, (1, size), 0.0, 0, 4 * size)
