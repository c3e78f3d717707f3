"""How `harness eval` scales with the number of samples, and what host work costs beside a real link.

Side by side in one run, all on the virtual board (figures are `sim` and `host`, of this machine):
1. Peak resident memory and wall time of `harness eval --subset all` at N = 1,000, 4,000 and 16,000
   samples: copies of the demo set under new names (so it runs offline), each N in a fresh cache, so the
   first pass decodes every image; the ratio of peak RSS at the largest N to the smallest.
2. Cache bytes per sample for the model (the entry's rows and its index, over its samples).
3. With the link paced at 921600 baud and each inference lasting 90 ms (`--link-baud`,
   `--emulate-invoke-ms`): wall time of an eval with both host references (tflm, litert_ref) over the
   same eval with none, both from a warm cache, alternated over --rounds.

Peak RSS is the largest of the harness process and the processes it waited for (os.wait4: the virtual
board, the reference worker), as the kernel reports it.

    python benchmarks/scale.py [--sizes 1000,4000,16000] [--paced-samples 40] [--rounds 3]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.eval.dataset import load_dataset
from harness.eval.demo_dataset import demo_copies

PACED = ["--link-baud", "921600", "--emulate-invoke-ms", "90"]
RSS_RATIO_MAX, CACHE_BYTES_MAX, HOST_WORK_RATIO_MAX = 1.3, 27_700, 1.05


def run_and_wait(args: list[str], env: dict) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS bytes, the --json summary) of one `harness eval`: wait4 gives its rusage."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "eval", "--board", "sim", "--json", *args],
            stdout=out,
            stderr=err,
            env=env,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            tail = err.read().decode().strip().splitlines()
            raise SystemExit(f"harness eval {' '.join(args)} failed: {tail[-1] if tail else proc.returncode}")
        return wall, usage.ru_maxrss * 1024, json.loads(out.read())


def cache_bytes_per_sample(cache: Path) -> float:
    entries = list((cache / "tensors").glob("*.json"))
    samples = sum(len(json.loads(p.read_text())["ids"]) for p in entries)
    total = sum(p.stat().st_size for p in (cache / "tensors").iterdir())
    return total / samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,4000,16000")
    parser.add_argument("--paced-samples", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default="mlperf_tiny_vww")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    demo = load_dataset("demo")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        print(f"model {args.model} on the virtual board; {os.cpu_count()} cores")
        print(f"{'N':>7} {'wall s':>8} {'s/sample':>9} {'peak RSS MB':>12} {'cache B/sample':>15}")
        rss, cache_per_sample = {}, None
        for n in sizes:
            data = demo_copies(n, scratch / f"data{n}", demo)
            cache = scratch / f"cache{n}"
            env = os.environ | {"HARNESS_CACHE_DIR": str(cache)}
            common = ["--model", args.model, "--dataset", str(data), "--subset", "all", "--no-pools"]
            wall, peak, summary = run_and_wait([*common, "--results", str(scratch / f"runs{n}")], env)
            assert summary["samples"] == n, summary["samples"]
            cache_per_sample = cache_bytes_per_sample(cache)
            rss[n] = peak
            print(f"{n:>7} {wall:>8.1f} {wall / n:>9.4f} {peak / 2**20:>12.1f} {cache_per_sample:>15.1f}")
            shutil.rmtree(scratch / f"runs{n}")
        ratio = rss[sizes[-1]] / rss[sizes[0]]
        print(f"peak RSS at {sizes[-1]} / at {sizes[0]}: {ratio:.3f} (target <= {RSS_RATIO_MAX})")
        print(f"cache bytes per sample: {cache_per_sample:.1f} (target <= {CACHE_BYTES_MAX})")

        data = demo_copies(args.paced_samples, scratch / "paced", demo)
        env = os.environ | {"HARNESS_CACHE_DIR": str(scratch / "paced-cache")}
        common = ["--model", args.model, "--dataset", str(data), "--subset", "all", "--no-pools", *PACED]
        run_and_wait([*common, "--references", "none", "--results", str(scratch / "warm")], env)  # fills the cache
        with_refs, without = [], []
        for round_ in range(args.rounds):
            for refs, into in (("tflm,litert_ref", with_refs), ("none", without)):
                wall, _, _ = run_and_wait(
                    [*common, "--references", refs, "--results", str(scratch / f"p{round_}")], env
                )
                into.append(wall)
        best_with, best_without = min(with_refs), min(without)
        print(
            f"paced link (921600 baud, 90 ms inference), {args.paced_samples} samples: "
            f"both references {best_with:.2f} s, none {best_without:.2f} s (best of {args.rounds})"
        )
        ratio = best_with / best_without
        print(f"wall with both host references / with none: {ratio:.3f} (target <= {HOST_WORK_RATIO_MAX})")


if __name__ == "__main__":
    main()
