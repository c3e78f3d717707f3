"""Preprocessing speed, side by side in one run: a naive per-image PIL loop, harness's first pass
(decode and preprocess in parallel, then cache), and its cached second pass, all producing 96x96x3
uint8 inputs from the same images.

    python benchmarks/preprocess.py [--copies 4]

The demo set is used `--copies` times over (each copy a separate folder, so nothing is shared
between passes but the files themselves).
"""

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from harness.eval.dataset import load_dataset
from harness.eval.inputs import prepare_inputs
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()
    demo = load_dataset("demo")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["HARNESS_CACHE_DIR"] = cache
        samples = []
        for copy in range(args.copies):  # distinct paths and ids: no pass benefits from another's cache
            for s in demo.samples:
                target = Path(cache) / f"copy{copy}" / s.id
                target.parent.mkdir(exist_ok=True)
                shutil.copy(s.image_path, target)
                samples.append(type(s)(f"{copy}/{s.id}", target, s.flags))
        paths = [s.image_path for s in samples]
        naive(paths[:10])  # warm the file cache for both contenders
        naive_seconds = naive(paths)
        start = time.perf_counter()
        first = prepare_inputs(demo, samples, PRE, SPEC)
        first_seconds = time.perf_counter() - start
        start = time.perf_counter()
        second = prepare_inputs(demo, samples, PRE, SPEC)
        cached_seconds = time.perf_counter() - start
    assert not first.from_cache and second.from_cache and np.array_equal(first.tensors, second.tensors)
    n = len(samples)
    print(f"{n} images ({demo.name}), {SIZE}x{SIZE}x3 uint8, {os.cpu_count()} cores")
    print(f"naive PIL loop       {naive_seconds * 1e3 / n:7.3f} ms/image")
    print(f"harness first pass   {first_seconds * 1e3 / n:7.3f} ms/image")
    print(f"harness cached pass  {cached_seconds * 1e3 / n:7.3f} ms/image")
    print(f"first pass speed-up over the naive loop: {naive_seconds / first_seconds:.2f}x")
    print(f"cached pass speed-up over the first pass: {first_seconds / cached_seconds:.1f}x")


if __name__ == "__main__":
    main()
