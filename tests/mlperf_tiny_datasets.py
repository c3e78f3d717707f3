"""Small datasets in the MLPerf Tiny runner's layout for the four cards (kws01, ic01: random files, one per
class in turn; ad01: float32 spectrograms, one normal file and one anomalous), shared by the tests that run
the cards end to end (tests/e2e/qemu, tests/e2e/hosted)."""

from pathlib import Path

import numpy as np

AD01_FEATURES = 128  # a frame's features; a window is 5 frames (640 features), one frame apart


def runner_folder(root: Path, name: str, size: int, classes: int, seed: int, files: int) -> Path:
    """`name`'s folder as the runner's datasets hold it: y_labels.csv rows `file,classes,class`, the files."""
    folder = root / name
    folder.mkdir()
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(files):
        file = f"{name}_{i:03d}.bin"
        rng.integers(0, 256, size, dtype=np.uint8).tofile(folder / file)
        rows.append(f"{file},{classes},{i % classes}")
    (folder / "y_labels.csv").write_text("\n".join(rows) + "\n")
    return folder


def ad01_folder(root: Path, files: int, frames: int) -> Path:
    """ad01's runner folder: float32 spectrograms in the model's input range (shorter than the runner's 200
    frames, to keep tests short: frames - 4 windows a file), rows `file,2,class,2560,512`."""
    folder = root / "ad01"
    folder.mkdir()
    rng = np.random.default_rng(5)
    rows = []
    for i in range(files):
        label = i % 2
        values = rng.normal(-20 + 6 * label, 6 + 4 * label, (frames, AD01_FEATURES)).astype(np.float32)
        file = f"{'anomaly' if label else 'normal'}_id_00_{i:08d}_hist_numpy.bin"
        values.tofile(folder / file)
        rows.append(f"{file},2,{label},2560,512")
    (folder / "y_labels.csv").write_text("\n".join(rows) + "\n")
    return folder


def card_arguments(root: Path, files: int, ad01_files: int, ad01_frames: int, images: int) -> dict[str, list[str]]:
    """Each card's eval arguments for such datasets under `root`: vww01 the first `images` demo images, kws01
    and ic01 `files` random runner files, ad01 `ad01_files` files of `ad01_frames` frames."""
    return {
        "mlperf_tiny_vww01": ["--limit", str(images)],
        "mlperf_tiny_kws01": ["--dataset", str(runner_folder(root, "kws01", 490, 12, 1, files))],
        "mlperf_tiny_ic01": ["--dataset", str(runner_folder(root, "ic01", 3072, 10, 2, files))],
        "mlperf_tiny_ad01": ["--dataset", str(ad01_folder(root, ad01_files, ad01_frames))],
    }
