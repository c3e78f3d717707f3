"""The MLPerf Tiny runner's datasets: a folder with y_labels.csv and the .bin files it names, each file
what the DUT's th_load_tensor takes, byte for byte (mlcommons/tiny benchmark/evaluation/datasets).

y_labels.csv has no header; a row is `file,classes,class` (vww01, ic01, kws01), or for ad01
`file,classes,class,window_bytes,stride_bytes`: the file is a spectrogram the runner sends in windows
of window_bytes every stride_bytes (harness/eval/anomaly.py scores a file over its windows).
"""

import hashlib
import os
from pathlib import Path

import numpy as np

from harness.digits import int_or_none
from harness.errors import UserError, setting
from harness.model.card import REFERENCE_INPUTS, EembcDut, ModelCard
from harness.reading import LABELS, read_bytes, read_csv_lines
from harness.samples import Dataset, Preparation, Sample
from harness.tensors import TensorSpec

LABELS_FILE = "y_labels.csv"
WINDOW_MARK = "@"  # a window's sample id: file@byte offset


def _row_numbers(path: Path, line: int, row: list[str], classes: int) -> tuple[int, ...]:
    numbers = tuple(int_or_none(v) for v in row[1:])  # ASCII digits only: int() also takes Arabic-Indic ones
    if None in numbers:
        raise UserError(f"{path} line {line}: {row[1:]} are not whole numbers; write file,classes,class")
    if numbers[0] != classes:
        raise UserError(
            f"{path} line {line}: {row[0]} counts {numbers[0]} classes but the model card has {classes}; "
            "pass the card of this dataset's benchmark"
        )
    if not 0 <= numbers[1] < classes:
        raise UserError(f"{path} line {line}: class {numbers[1]} of {row[0]} is not in 0..{classes - 1}")
    return numbers


def load_runner_dataset(spec: str, card: ModelCard, windows: bool = False) -> Dataset:
    """One sample per file, or per window of a windowed row (`windows`: the runner windows only ad01's
    files, scored over their windows). For the reference benchmarks every
    file's size is checked here, so a file the DUT would refuse (th_load_tensor's size check) stops the
    run before it starts; for others, each file is checked against the model as it is read."""
    root = Path(spec)
    input_bytes = REFERENCE_INPUTS.get(card.eembc.model, (None,))[0]
    labels = root / LABELS_FILE
    if not labels.is_file():
        raise UserError(
            f"{spec} is not an MLPerf Tiny runner dataset (no {LABELS_FILE}); card {card.name} takes the "
            f"runner's files: pass {setting('dataset')} the folder with {LABELS_FILE} and its .bin files"
        )
    classes = len(card.output.labels)
    samples: list[Sample] = []
    fields = None  # every row as the first: whole files or windows, never both
    # the rows through harness/reading.py: a regular UTF-8 file, its fields capped
    for line, row in read_csv_lines(labels, LABELS):
        row = [v.strip() for v in row]
        if not row or not any(row):
            continue
        if len(row) not in (3, 5):
            raise UserError(
                f"{labels} line {line}: {len(row)} fields; a row is file,classes,class "
                "(or file,classes,class,window_bytes,stride_bytes)"
            )
        if len(row) == 5 and not windows:
            raise UserError(
                f"{labels} line {line}: a windowed row (window_bytes, stride_bytes), which the runner "
                f"sends only to ad01; card {card.name} takes whole files: file,classes,class"
            )
        if fields is not None and len(row) != fields:
            raise UserError(
                f"{labels} line {line}: {len(row)} fields where the rows before have {fields}; "
                "a dataset is whole files or windows, not both"
            )
        fields = len(row)
        numbers = _row_numbers(labels, line, row, classes)
        path = _inside(root, labels, line, row[0])
        if not path.is_file():
            raise UserError(f"{labels} line {line}: {row[0]} is not in {root}; copy the dataset's .bin files there")
        size = path.stat().st_size
        samples.extend(_file_samples(labels, line, row[0], path, size, numbers, input_bytes))
    if not samples:
        raise UserError(f"{labels} names no file; fill it from the benchmark's y_labels.csv")
    return Dataset(root.name, labels, hashlib.sha256(read_bytes(labels, LABELS)).hexdigest(), tuple(samples))


def _inside(root: Path, labels: Path, line: int, name: str) -> Path:
    """The file a row names, if it resolves inside the dataset's folder (no '..', no absolute path, no link out)."""
    path = root / name
    if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root)):
        raise UserError(f"{labels} line {line}: {name} lies outside {root}; a row names a file in the dataset's folder")
    return path


def _file_samples(labels: Path, line: int, name: str, path: Path, size: int, numbers, input_bytes: int):
    label = numbers[1]
    if len(numbers) == 2:
        if input_bytes is not None and size != input_bytes:
            raise UserError(
                f"{labels} line {line}: {name} is {size} bytes but the model takes {input_bytes}; "
                "this dataset is another benchmark's"
            )
        return [Sample(name, path, {"label": label})]
    window, stride = numbers[2], numbers[3]
    if (input_bytes is not None and window != input_bytes) or stride < 1 or not 0 < window <= size:
        raise UserError(
            f"{labels} line {line}: {name} ({size} bytes) in windows of {window} every {stride} bytes; "
            f"a window must be the model's input ({input_bytes or 'its input'} bytes) and fit in the file"
        )
    return [
        Sample(f"{name}{WINDOW_MARK}{start}", path, {"label": label, "offset": start, "window": window})
        for start in range(0, size - window + 1, stride)
    ]


def file_of(sample: Sample) -> str:
    """The dataset file a sample comes from (a window's file for windowed rows)."""
    return sample.id.rsplit(WINDOW_MARK, 1)[0] if "offset" in sample.flags else sample.id


def runner_file_preparation(dut: EembcDut, spec: TensorSpec) -> Preparation:
    """A file's bytes as the model's input tensor: as they are, or (eembc.input uint8) each uint8 byte
    less 128 as the reference th_load_tensor makes it, which the EEMBC client sends back as the byte."""

    def tensor_of(sample: Sample) -> np.ndarray:
        windowed = "offset" in sample.flags  # a window reads the model's input from its offset; a file is whole
        if windowed and sample.flags["window"] != spec.bytes:
            raise ValueError(f"windows of {sample.flags['window']} bytes, the model takes {spec.bytes}")
        with open(sample.image_path, "rb") as f:
            f.seek(sample.flags.get("offset", 0))
            data = f.read(spec.bytes if windowed else -1)
        if len(data) != spec.bytes:
            what = f"from byte {sample.flags['offset']}" if windowed else "in all"
            raise ValueError(f"{sample.image_path.name} holds {len(data)} bytes {what}; the model takes {spec.bytes}")
        values = np.frombuffer(data, np.uint8)
        if dut.input == "uint8":
            values = values ^ 0x80
        return values.view(spec.numpy_dtype).reshape(spec.shape)

    return Preparation(f"{dut}|{spec}", spec, tensor_of)
