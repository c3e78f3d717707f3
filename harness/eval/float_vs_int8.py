"""Float against int8 layer by layer on benchmark data (the comparison itself: harness/model/layer_fidelity.py).

Which models: the int8 model is the card's own .tflite, or else the int8 conversion `harness eval` runs (cached)
of the float Keras model: --float-model when it is one, else the card's. The float side is --float-model, or
else the card's float model, converted to float TFLite once (cached beside the int8 conversions).

Which samples: the held-out part of the eval conversion's split (harness/eval/convert.py eval_split: all
subsets, 50 calibration samples at most, the default split seed), in its order: samples the int8 conversion was
never calibrated on. A card's own int8 file was calibrated elsewhere, on data harness does not know."""

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.console import notice
from harness.errors import UserError, setting
from harness.model.card import ModelCard
from harness.model.layer_fidelity import STATUS, WORST_LAYERS, FidelityReport, LayerFidelity, compare_layers
from harness.tensors import TensorSpec

FLOAT_MODEL_SUFFIXES = (".tflite", ".keras", ".h5")


@dataclass
class FloatInt8Comparison:
    card: str
    int8_model: Path
    float_model: Path
    float_source: Path
    samples: list[str]  # the held-out sample ids compared, in order
    held_out: int
    split: str  # how the held-out samples were chosen, in words
    report: FidelityReport

    def as_dict(self) -> dict:
        """What --json prints and the API's DataFrame holds: every figure from LiteRT on this machine (host)."""
        return {
            "card": self.card,
            "source": "host",
            "int8_model": str(self.int8_model),
            "float_model": str(self.float_model),
            "float_source": str(self.float_source),
            "samples": self.samples,
            "held_out": self.held_out,
            "split": self.split,
            "worst_rule": f"the {WORST_LAYERS} layers that add the most relative L2 error to their inputs'",
            "input": layer_dict(self.report.input),
            "layers": [layer_dict(row) for row in self.report.layers],
            "not_compared": [layer_dict(row) for row in self.report.not_compared],
        }


def layer_dict(row: LayerFidelity) -> dict:
    return dataclasses.asdict(row) | {"shape": list(row.shape), "source": "host", "status_means": STATUS[row.status]}


def check_float_model_path(path: Path) -> None:
    """A --float-model that cannot be a float model, refused before anything is fetched or loaded."""
    from harness.model.convert import SAVED_MODEL_FILES

    if path.is_dir():
        if not any((path / name).is_file() for name in SAVED_MODEL_FILES):
            raise UserError(
                f"{setting('float_model')} {path} is a folder but not a SavedModel; pass a .tflite, .keras or .h5 file"
            )
        return
    if path.suffix.lower() not in FLOAT_MODEL_SUFFIXES:
        raise UserError(
            f"{setting('float_model')} {path} is not a .tflite, .keras or .h5 file; pass the float model in one of "
            "those forms (or a SavedModel folder)"
        )
    if not path.exists():
        raise UserError(f"{setting('float_model')} {path} does not exist; pass the float model's path")
    from harness import reading

    reading.check_regular(path, reading.FLOAT_MODEL)


def float_vs_int8(model: str, float_model: str | Path | None, samples: int, dataset: str) -> FloatInt8Comparison:
    """The comparison the command and the API ask for: a card's name or .toml, --float-model, --samples,
    --dataset; every mistake a UserError in one line, before TensorFlow loads."""
    from harness.eval.dataset import load_dataset
    from harness.model.cards import load_card

    card = load_card(model)
    if float_model is not None:
        check_float_model_path(Path(float_model))
    return compare_float_int8(card, Path(float_model) if float_model else None, samples, load_dataset(dataset))


def compare_float_int8(card: ModelCard, float_model: Path | None, samples: int, dataset) -> FloatInt8Comparison:
    from harness.eval.convert import converted_for_eval, eval_split
    from harness.model.convert import is_float_model
    from harness.model.fetch import obtain_model
    from harness.model.tasks import CARD_TASKS

    if CARD_TASKS[card.task].inputs != "image":
        raise UserError(
            f"card {card.name} is a {card.task.replace('_', ' ')} card; float against int8 handles image cards "
            "(for example mlperf_tiny_vww_float)"
        )
    if float_model is not None:
        check_float_model_path(float_model)
    own = obtain_model(card)
    own_is_float = is_float_model(own)
    if float_model is None and not own_is_float:
        raise UserError(
            f"card {card.name} has no float source (its model is int8); pass {setting('float_model')} "
            "with its float .tflite, .keras or .h5 model"
        )
    float_source = float_model or own
    _, held_out = eval_split(dataset)
    if samples > len(held_out):
        raise UserError(
            f"{setting('samples')} {samples}: {dataset.name} has {len(held_out)} held-out samples; "
            f"pass at most {len(held_out)}"
        )
    if own_is_float:
        keras = float_source if is_float_model(float_source) else own
        int8_path = converted_for_eval(keras, card, dataset).path
    else:
        int8_path = own
    float_path = float_source if float_source.suffix.lower() == ".tflite" else _cached_float_tflite(float_source, card)
    chosen = held_out[:samples]
    pairs, ids = _input_pairs(card, dataset, chosen, int8_path)
    report = compare_layers(int8_path.read_bytes(), float_path.read_bytes(), pairs, float_source.name)
    calibrated = "calibration" if own_is_float else "calibration of harness's own conversions"
    split = f"held out from the {calibrated} (split seed {_seed()}, {dataset.name}): the first {len(ids)}"
    return FloatInt8Comparison(card.name, int8_path, float_path, float_source, ids, len(held_out), split, report)


def _seed() -> int:
    from harness.defaults import DEFAULT_SPLIT_SEED

    return DEFAULT_SPLIT_SEED


def _cached_float_tflite(source: Path, card: ModelCard) -> Path:
    """The float model as float TFLite, converted once: keyed by its content and the converter's version."""
    from harness.files import write_atomically
    from harness.model.convert import converter_version, float_tflite, load_float_model, source_sha256
    from harness.paths import cache_dir

    key = hashlib.sha256(f"{source_sha256(source)}|{converter_version()}".encode()).hexdigest()[:16]
    out = cache_dir() / "converted" / f"{card.name}-{key}-float.tflite"
    if not out.is_file():
        notice(f"harness: converting {source.name} to float TFLite once (cached)")
        data = float_tflite(load_float_model(source))
        write_atomically(out, lambda partial: partial.write_bytes(data))
    return out


def _input_pairs(card: ModelCard, dataset, chosen: list, int8_path: Path):
    """(float input, int8 model's input) for each readable sample, and the samples' ids."""
    from harness.eval.inputs import image_preparation, prepare_inputs
    from harness.eval.preprocess import to_tensor
    from harness.model.tflite_file import read_tflite

    height, width = card.preprocessing.size
    channels = 1 if card.preprocessing.color == "grayscale" else 3
    float_spec = TensorSpec(1, (1, height, width, channels), 0.0, 0, 4 * height * width * channels)
    inputs = prepare_inputs(dataset, chosen, image_preparation(card.preprocessing, float_spec))
    quantized = read_tflite(int8_path).input
    pairs = []
    for tensor in inputs.tensors:
        real = np.asarray(tensor, dtype=np.float32)
        pairs.append((real, to_tensor(real.reshape(real.shape[1:]).copy(), quantized)))
    return pairs, [sample.id for sample in inputs.samples]
