"""Preprocessing speed, side by side in one run: a naive per-image PIL loop against harness's first
pass (decode and preprocess on every core, then cache) and its cached second pass, all producing
96x96x3 uint8 inputs from the same JPEG images. Rounds alternate naive / harness and the medians
and the per-round ratios are printed (these machines are noisy).

    python benchmarks/preprocess.py [--copies 4] [--rounds 3]
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from harness.eval.dataset import load_dataset
from harness.eval.inputs import image_preparation, prepare_inputs
from harness.model.card import Preprocessing
from harness.tensors import TensorSpec

SIZE = 96
PRE = Preprocessing("wv-challenge", (SIZE, SIZE), "rgb", "bilinear", "none", "raw", "uint8", "truncate")
SPEC = TensorSpec(3, (1, SIZE, SIZE, 3), 1.0, 0, SIZE * SIZE * 3)


def naive(paths) -> float:
    start = time.perf_counter()
    for path in paths:
        with Image.open(path) as image:
            np.asarray(image.convert("RGB").resize((SIZE, SIZE), Image.Resampling.BILINEAR), dtype=np.uint8)
    return time.perf_counter() - start


def harness_pass(demo, samples, cache: Path) -> tuple[float, object]:
    os.environ["HARNESS_CACHE_DIR"] = str(cache)
    start = time.perf_counter()
    inputs = prepare_inputs(demo, samples, image_preparation(PRE, SPEC))
    return time.perf_counter() - start, inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    demo = load_dataset("demo")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        samples = []
        for copy in range(args.copies):  # distinct files and ids: nothing is shared between passes
            for s in demo.samples:
                target = work / "images" / f"copy{copy}" / s.id
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(s.image_path, target)
                samples.append(type(s)(f"{copy}/{s.id}", target, s.flags))
        os.sync()  # no write-back of the copies during the measurements
        paths = [s.image_path for s in samples]
        naive(paths[:20])  # the same warm-up for both contenders
        harness_pass(demo, samples[:20], work / "warm")
        naive_runs, first_runs, cached_runs = [], [], []
        for round_ in range(args.rounds):
            naive_runs.append(naive(paths))
            seconds, first = harness_pass(demo, samples, work / f"cache{round_}")
            first_runs.append(seconds)
            seconds, cached = harness_pass(demo, samples, work / f"cache{round_}")
            cached_runs.append(seconds)
            assert not first.from_cache and cached.from_cache and np.array_equal(first.tensors, cached.tensors)
    n = len(samples)

    def per_image(runs):
        return statistics.median(runs) * 1e3 / n

    print(f"{n} images ({demo.name}, JPEG), {SIZE}x{SIZE}x3 uint8, {os.cpu_count()} cores, {args.rounds} rounds")
    print(f"naive PIL loop       {per_image(naive_runs):7.3f} ms/image (median)")
    print(f"harness first pass   {per_image(first_runs):7.3f} ms/image (median)")
    print(f"harness cached pass  {per_image(cached_runs):7.3f} ms/image (median)")
    ratios = [a / b for a, b in zip(naive_runs, first_runs, strict=True)]
    print(
        f"first pass speed-up over the naive loop: {statistics.median(ratios):.2f}x (per round: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + ")"
    )
    cached_speedup = statistics.median(first_runs) / statistics.median(cached_runs)
    print(f"cached pass speed-up over the first pass: {cached_speedup:.1f}x")


if __name__ == "__main__":
    main()
