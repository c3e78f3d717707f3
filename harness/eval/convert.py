"""`harness convert` on benchmark data: calibration samples drawn from a dataset's subsets through the model
card's preprocessing, the converter (harness/model/convert.py) run on them, then the result checked:
every operator must have a TFLM kernel, and int8 must agree with float on the held-out samples."""

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.console import notice
from harness.defaults import DEFAULT_SPLIT_SEED  # the calibration / held-out draw; fixed so a conversion repeats
from harness.errors import UserError, setting
from harness.eval.inputs import image_preparation, prepare_inputs
from harness.eval.outputs import predict
from harness.eval.preprocess import to_tensor
from harness.eval.sampling import select_samples
from harness.eval.subsets import SUBSETS
from harness.files import write_atomically
from harness.model.card import ModelCard
from harness.model.convert import (
    IO_TYPES,
    FloatModel,
    check_convertible,
    check_input_fits,
    converter_version,
    load_float_model,
    quantize,
    source_sha256,
)
from harness.model.deployable import missing_tflm_kernels
from harness.model.tflite_file import read_tflite
from harness.paths import cache_dir
from harness.tensors import TensorSpec

EVAL_CALIBRATION_SAMPLES = 50
EVAL_IO = "int8"


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
        converter_version(),
    ]
    key = hashlib.sha256("|".join(key_parts).encode()).hexdigest()[:16]
    out = cache_dir() / "converted" / f"{card.name}-{key}.tflite"
    if not out.is_file():
        notice(
            f"harness: converting {source.name} for {card.name} to int8 once (cached; split seed {DEFAULT_SPLIT_SEED})"
        )
        convert(source, card, dataset, [SUBSETS["all"]], EVAL_CALIBRATION_SAMPLES, EVAL_IO, out)
    return ConvertedForEval(out, source, source_digest, DEFAULT_SPLIT_SEED)


def split_samples(dataset, subsets, samples: int, seed: int) -> tuple[list, list]:
    """(calibration, held-out) samples of the dataset's subsets: at most `samples`, and at most half, calibrate."""
    pool = select_samples(dataset.samples, subsets)
    if len(pool) < 4:
        raise UserError(f"{dataset.name} has {len(pool)} samples in the chosen subsets; converting needs at least 4")
    return calibration_split(pool, min(samples, len(pool) // 2), seed)


def eval_split(dataset) -> tuple[list, list]:
    """The (calibration, held-out) samples of converted_for_eval's conversion."""
    return split_samples(dataset, [SUBSETS["all"]], EVAL_CALIBRATION_SAMPLES, DEFAULT_SPLIT_SEED)


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
        raise UserError(f"{setting('io')} {io} is unknown; use one of {', '.join(IO_TYPES)}")
    check_convertible(source, card, out)
    digest = source_sha256(source)
    calibration, held_out = split_samples(dataset, subsets, samples, split_seed)
    float_model = load_float_model(source)
    height, width = card.preprocessing.size
    channels = 1 if card.preprocessing.color == "grayscale" else 3
    float_spec = TensorSpec(1, (1, height, width, channels), 0.0, 0, 4 * height * width * channels)
    calibration_inputs = prepare_inputs(dataset, calibration, image_preparation(card.preprocessing, float_spec)).tensors
    held_inputs = prepare_inputs(dataset, held_out, image_preparation(card.preprocessing, float_spec))
    check_input_fits(float_model, calibration_inputs[0], card)
    data = quantize(float_model, calibration_inputs, io)

    checked = []

    def write_checked(partial: Path) -> None:  # out appears only once the model has passed every check
        partial.write_bytes(data)
        missing = missing_tflm_kernels(partial)
        if missing:
            raise UserError(f"{source.name}: TFLM has no kernel for {', '.join(missing)}; change those layers")
        checked.append(_evaluate(partial, card, held_inputs, float_model, len(calibration)))

    try:
        write_atomically(out, write_checked)
    except OSError as exc:
        raise UserError(
            f"cannot write {out} ({exc.strerror}); pass {setting('out')} in a folder you can write"
        ) from exc
    result = checked[0]
    result.out = out
    result.split_seed = split_seed
    result.calibration_classes = class_counts(calibration)
    result.held_out_classes = class_counts(held_out)
    result.source_sha256 = digest
    return result


def _evaluate(out: Path, card: ModelCard, held, float_model: FloatModel, calibrated: int) -> Conversion:
    from harness.model.references import TflmReference

    quantized = read_tflite(out)
    reference = TflmReference(quantized)
    agree = float_ok = int8_ok = 0
    for sample, tensor in zip(held.samples, held.tensors, strict=True):
        real = np.asarray(tensor, dtype=np.float32)
        float_out = float_model.predict_quietly(real).ravel()
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
