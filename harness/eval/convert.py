"""`harness convert`: a float Keras model (Keras 3 `.keras`, legacy `.h5`, or a SavedModel folder) to
a full-integer TFLite model, calibrated on benchmark samples through the model card's preprocessing,
then checked: every operator must have a TFLM kernel, and int8 must agree with float on held-out data.

TensorFlow is needed only here (`pip install tensorflow-cpu tf-keras`).
"""

import contextlib
import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.errors import UserError
from harness.eval.inputs import image_preparation, prepare_inputs
from harness.eval.outputs import predict
from harness.eval.preprocess import to_tensor
from harness.eval.subsets import SUBSETS, select_samples
from harness.files import write_atomically
from harness.model.card import ModelCard
from harness.model.deployable import missing_tflm_kernels
from harness.model.tflite_file import read_tflite
from harness.paths import cache_dir
from harness.tensors import TensorSpec

IO_TYPES = ("int8", "uint8", "float32")
FLOAT_SUFFIXES = (".keras", ".h5")
DEFAULT_SPLIT_SEED = 0  # the calibration / held-out draw; fixed so a conversion is reproducible
EVAL_CALIBRATION_SAMPLES = 50
EVAL_IO = "int8"
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
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _converter_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for package in ("tensorflow", "tensorflow-cpu"):
        try:
            return f"{package}=={version(package)}"
        except PackageNotFoundError:
            continue
    return "no-tensorflow"


@dataclass
class ConvertedForEval:
    path: Path
    source: Path
    source_sha256: str
    split_seed: int

    def provenance(self) -> dict:
        """What the run manifest records about the float model the .tflite was converted from."""
        return {
            "file": str(self.source),
            "sha256": self.source_sha256,
            "calibration_samples": EVAL_CALIBRATION_SAMPLES,
            "io": EVAL_IO,
            "split_seed": self.split_seed,
        }


def converted_for_eval(source: Path, card: ModelCard, dataset) -> ConvertedForEval:
    """The float model at source converted with the defaults (int8, 50 calibration samples, the default
    split seed), cached by the source's content, the card's preprocessing and output, the calibration data
    and the converter version, so `harness eval` runs float cards like any other."""
    source_digest = source_sha256(source)
    key_parts = [
        source_digest,
        repr(card.preprocessing),
        repr(card.output),
        dataset.csv_sha256,
        str(EVAL_CALIBRATION_SAMPLES),
        EVAL_IO,
        str(DEFAULT_SPLIT_SEED),
        _converter_version(),
    ]
    key = hashlib.sha256("|".join(key_parts).encode()).hexdigest()[:16]
    out = cache_dir() / "converted" / f"{card.name}-{key}.tflite"
    if not out.is_file():
        print(
            f"harness: converting {source.name} for {card.name} to int8 once (cached; split seed {DEFAULT_SPLIT_SEED})",
            file=sys.stderr,
        )
        convert(source, card, dataset, [SUBSETS["all"]], EVAL_CALIBRATION_SAMPLES, EVAL_IO, out)
    return ConvertedForEval(out, source, source_digest, DEFAULT_SPLIT_SEED)


def calibration_split(pool: list, calibration_count: int, seed: int) -> tuple[list, list]:
    """(calibration, held-out) drawn from pool with a seeded shuffle. When the samples carry a class
    label, both halves keep the pool's class proportions (to within one sample per class), so neither
    calibration ranges nor the held-out accuracy come from one class only."""
    rng = np.random.default_rng(seed)
    by_class: dict = {}
    for sample in pool:
        by_class.setdefault(_class_of(sample), []).append(sample)
    ranked = []  # each class shuffled, then spread evenly over the draw order
    for number, members in enumerate(by_class.values()):
        order = rng.permutation(len(members))
        for rank, index in enumerate(order):
            ranked.append(((rank + rng.random()) / len(members), number, members[index]))
    ranked.sort(key=lambda item: (item[0], item[1]))
    drawn = [sample for _, _, sample in ranked]
    return drawn[:calibration_count], drawn[calibration_count:]


def _class_of(sample):
    flags = getattr(sample, "flags", {})
    return flags.get("label", flags.get("person"))


def class_counts(samples: list) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sample in samples:
        name = str(_class_of(sample))
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


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
        try:
            loaded = tf.saved_model.load(str(path))
            signature = loaded.signatures["serving_default"]
        except Exception as exc:
            raise UserError(
                f"SavedModel {path} cannot be loaded ({type(exc).__name__}); "
                "export it again with a serving_default signature, or pass a .keras or .h5 file"
            ) from exc
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
    split_seed: int = DEFAULT_SPLIT_SEED
    calibration_classes: dict[str, int] = field(default_factory=dict)
    held_out_classes: dict[str, int] = field(default_factory=dict)
    source_sha256: str = ""


def check_convertible(source: Path | None, card: ModelCard, out: Path) -> None:
    """The mistakes found before TensorFlow loads and converts anything, each in one line (source None:
    the card's own model, not fetched yet)."""
    if card.task != "image_classification":
        raise UserError(
            f"card {card.name} is a {card.task.replace('_', ' ')} card; convert handles image classification "
            "cards only: pass --card with an image card (for example mlperf_tiny_vww_float)"
        )
    if out.is_dir():
        raise UserError(f"--out {out} is a directory; pass the path of the .tflite file to write")
    if out.parent.exists() and not out.parent.is_dir():
        raise UserError(f"--out {out}: {out.parent} is not a directory; pass a path in an existing folder")
    if source is None:
        return
    if not source.exists():
        raise UserError(f"model {source} does not exist; pass a .keras or .h5 file or a SavedModel folder")
    if source.is_dir() and not any((source / name).is_file() for name in SAVED_MODEL_FILES):
        raise UserError(
            f"model folder {source} is not a SavedModel (it has no saved_model.pb); "
            "pass a SavedModel folder or a .keras or .h5 file"
        )


def convert(
    source: Path,
    card: ModelCard,
    dataset,
    subsets,
    samples: int,
    io: str,
    out: Path,
    split_seed: int = DEFAULT_SPLIT_SEED,
) -> Conversion:
    if io not in IO_TYPES:
        raise UserError(f"--io {io} is unknown; use one of {', '.join(IO_TYPES)}")
    check_convertible(source, card, out)
    digest = source_sha256(source)
    tf = _tensorflow()
    pool = select_samples(dataset.samples, subsets)
    if len(pool) < 4:
        raise UserError(f"{dataset.name} has {len(pool)} samples in the chosen subsets; converting needs at least 4")
    calibration, held_out = calibration_split(pool, min(samples, len(pool) // 2), split_seed)
    with _quiet():
        make_converter, predict_float = _load(source)
    height, width = card.preprocessing.size
    channels = 1 if card.preprocessing.color == "grayscale" else 3
    float_spec = TensorSpec(1, (1, height, width, channels), 0.0, 0, 4 * height * width * channels)
    calibration_inputs = prepare_inputs(dataset, calibration, image_preparation(card.preprocessing, float_spec)).tensors
    held_inputs = prepare_inputs(dataset, held_out, image_preparation(card.preprocessing, float_spec))

    _check_input_fits(source, predict_float, calibration_inputs[0], card)

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

    checked = []

    def write_checked(partial: Path) -> None:  # out appears only once the model has passed every check
        partial.write_bytes(data)
        missing = missing_tflm_kernels(partial)
        if missing:
            raise UserError(f"{source.name}: TFLM has no kernel for {', '.join(missing)}; change those layers")
        checked.append(_evaluate(partial, card, held_inputs, predict_float, len(calibration)))

    try:
        write_atomically(out, write_checked)
    except OSError as exc:
        raise UserError(f"cannot write {out} ({exc.strerror}); pass --out in a folder you can write") from exc
    result = checked[0]
    result.out = out
    result.split_seed = split_seed
    result.calibration_classes = class_counts(calibration)
    result.held_out_classes = class_counts(held_out)
    result.source_sha256 = digest
    return result


def _check_input_fits(source: Path, predict_float, example, card: ModelCard) -> None:
    """The float model must take what the card's preprocessing makes, or calibration means nothing."""
    try:
        with _quiet():
            predict_float(np.asarray(example, dtype=np.float32))
    except Exception as exc:
        shape = list(np.shape(example))
        raise UserError(
            f"{source.name} does not take the input {shape} that card {card.name}'s preprocessing makes "
            f"({type(exc).__name__}); pass the --card whose preprocessing matches the model"
        ) from exc


def _evaluate(out: Path, card: ModelCard, held, predict_float, calibrated: int) -> Conversion:
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
    return TensorSpec(1, (1, size), 0.0, 0, 4 * size)
