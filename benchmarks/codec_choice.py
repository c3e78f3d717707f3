"""Which lossless codec for inputs on the wire (docs/link.md, "Compressed inputs"): per input set, the mean
compressed size / raw size of each candidate, on the one-byte elements the wire carries (harness/link/input_forms.py).

Input sets: the demo images and the LPIRC fixture images at every image card's input size and colour, as the
eval prepares them (the card's pipeline; values 0..255, the bytes a uint8 card sends and, offset by 128, an int8
card's; and at 32x32 RGB, ic01's CIFAR-10 size), and the keyword cards' frontend outputs of the fixture clips
(micro_speech's int8 spectrogram). kws01's and ad01's int8 features come only from the MLPerf Tiny runner's files,
which are not among the fixtures. Sets whose files are absent here are named and skipped. Every figure is `host`.

Candidates: rows (harness/link/row_codec.py: subtract-green for RGB, per-row filter + Rice, the device's decoder),
rows-no-green (without subtract-green), rows-sub-up (only PNG's sub and up filters), png (each row's filter by
PNG's minimum-sum rule, then zlib -9 of the filtered bytes, as PNG does), zlib -9 and lz4 -12 of the raw bytes
(yardsticks; their decoders are far larger).

    python benchmarks/codec_choice.py [--limit 40]
"""

import argparse
import dataclasses
import os
import shutil
import subprocess
import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np

from harness.eval.preprocess import load_rgb, real_input
from harness.link import row_codec
from harness.model.card import AudioPreprocessing, Preprocessing
from harness.model.cards import all_cards

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
os.environ.setdefault("HARNESS_MODEL_MIRROR", str(FIXTURES / "models"))  # the keyword frontends, offline


def _filtered(elements: np.ndarray, row: int, step: int, filters: tuple[int, ...]) -> np.ndarray:
    """PNG's bytes: each row's residuals under the filter that codes it smallest (as the rows coder picks)."""
    rows = -(-len(elements) // row)
    grid = np.zeros(rows * row, np.int32)
    grid[: len(elements)] = elements.view(np.uint8)
    grid = grid.reshape(rows, row)
    residual = (grid[None] - row_codec.predictions(grid, step)) & 0xFF
    signed = np.where(residual >= 128, 256 - residual, residual).sum(axis=2)  # PNG's minimum-sum heuristic
    signed[[f for f in range(len(row_codec.FILTERS)) if f not in filters]] = np.iinfo(np.int64).max
    best = signed.argmin(axis=0)
    return np.concatenate([best[:, None], residual[best, np.arange(rows)]], axis=1).astype(np.uint8).ravel()


def _lz4(data: bytes) -> int:
    done = subprocess.run(["lz4", "-12", "-c", "-q"], input=data, capture_output=True, check=True)
    return len(done.stdout)


def sizes(elements: np.ndarray, row: int, step: int) -> dict[str, int]:
    raw = elements.tobytes()
    found = {
        "rows": len(row_codec.encode(elements, row, step, row_codec.OUT_BYTES)),
        "rows-no-green": len(row_codec.encode(elements, row, step, row_codec.OUT_BYTES, green=False)),
        "rows-sub-up": len(row_codec.encode(elements, row, step, row_codec.OUT_BYTES, filters=(1, 2))),
        "png": len(zlib.compress(_filtered(elements, row, step, tuple(range(5))).tobytes(), 9)),
        "zlib": len(zlib.compress(raw, 9)),
    }
    if shutil.which("lz4"):
        found["lz4"] = _lz4(raw)
    return found


def image_sets(limit: int) -> dict[str, list[tuple[np.ndarray, int, int]]]:
    from harness.eval.dataset import load_dataset

    sources = {"demo": [s.image_path for s in load_dataset("demo").samples[:limit]]}
    lpirc = FIXTURES / "lpirc" / "images"
    sources["lpirc"] = sorted(lpirc.glob("*.jpg"))[:limit] if lpirc.is_dir() else []
    shapes = {
        (card.preprocessing.size, card.preprocessing.color): card.preprocessing
        for card in all_cards().values()
        if isinstance(card.preprocessing, Preprocessing)
    }
    # ic01 (the MLPerf Tiny reference ResNet) takes CIFAR-10's 32x32 RGB images, which its card reads from the
    # runner's files: the same images at that size stand in for them.
    any_rgb = next(pre for (_, color), pre in shapes.items() if color == "rgb")
    shapes[((32, 32), "rgb")] = dataclasses.replace(any_rgb, size=(32, 32))
    sets = {}
    for name, paths in sources.items():
        if not paths:
            print(f"{name}: absent here, skipped")
            continue
        decoded = [load_rgb(path) for path in paths]
        for (size, color), pre in sorted(shapes.items()):
            pixels = dataclasses.replace(pre, scaling="raw")
            channels = 3 if color == "rgb" else 1
            tensors = [np.clip(np.round(real_input(rgb, pixels)), 0, 255).astype(np.uint8).ravel() for rgb in decoded]
            sets[f"{name} {size[0]}x{size[1]} {color}"] = [(t, size[1] * channels, channels) for t in tensors]
    return sets


def keyword_sets() -> dict[str, list[tuple[np.ndarray, int, int]]]:
    from harness.audio.frontend import keyword_preparation
    from harness.model.tflite_file import read_tflite
    from harness.samples import Sample

    clips = sorted((FIXTURES / "audio").glob("*.wav"))
    sets = {}
    for name, card in all_cards().items():
        model = FIXTURES / "models" / (card.mirror_path or "")
        if not isinstance(card.preprocessing, AudioPreprocessing) or not model.is_file() or not clips:
            continue
        spec = read_tflite(model).input
        if spec.numpy_dtype not in (np.int8, np.uint8):
            print(f"{name}: {spec.dtype_name} features, not one byte an element: skipped")
            continue
        prepare = keyword_preparation(card, spec).tensor_of
        tensors = [prepare(Sample(clip.name, clip, {})).ravel() for clip in clips]
        sets[f"{name} features {'x'.join(map(str, spec.shape[1:]))}"] = [(t, spec.shape[-1], 1) for t in tensors]
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=40, help="images a source (default 40)")
    args = parser.parse_args()
    reference = FIXTURES / "data"
    if not any(reference.glob("*/*")):
        print("MLPerf Tiny reference inputs (kws01/ic01/vww01/ad01 runner files): absent here, skipped")
    sets = image_sets(args.limit) | keyword_sets()
    print(f"{'input set':<34} {'n':>3} {'bytes':>6}  " + "  ".join(f"{c:>11}" for c in _names()))
    for name, samples in sets.items():
        ratios = defaultdict(list)
        for elements, row, step in samples:
            for candidate, size in sizes(elements, row, step).items():
                ratios[candidate].append(size / len(elements))
        cells = "  ".join(f"{np.mean(ratios[c]):>11.3f}" for c in _names() if c in ratios)
        print(f"{name:<34} {len(samples):>3} {len(samples[0][0]):>6}  {cells}  (host)")


def _names() -> list[str]:
    return ["rows", "rows-no-green", "rows-sub-up", "png", "zlib"] + (["lz4"] if shutil.which("lz4") else [])


if __name__ == "__main__":
    main()
