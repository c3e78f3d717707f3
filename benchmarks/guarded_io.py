"""What the one guarded way in costs: each figure measured side by side with the unguarded read in one run.

- labels CSV (100,000 rows): `reading.read_csv` (regular-file check, size cap, UTF-8, field cap, each row's
  line) against `csv.reader` over `open()`; target: guarded / plain <= 2.0.
- run summary JSON: `reading.read_json` (depth, every number finite, no key twice: a Python walk over the
  parsed value, beside json's C parser) against `json.loads(path.read_text())`; target: guarded / plain <= 5.0,
  a few milliseconds a run.
- input cache checksum (BLAKE2b, checked once per process per entry): the time to check a 16,000-sample entry of
  the default model (27,671 B/sample, docs/scale.md) against the eval it precedes at 90 ms a sample;
  target: check / eval <= 0.01.

Every figure is `host` (this machine).

    python benchmarks/guarded_io.py [--rounds 5]
"""

import argparse
import csv
import json
import statistics
import tempfile
import time
from pathlib import Path

from harness import reading
from harness.eval.input_cache import file_checksum

BYTES_PER_SAMPLE = 27_671
SAMPLES = 16_000
INVOKE_SECONDS = 0.090


def best_of(rounds: int, work) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def plain_csv(path: Path) -> list:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return list(csv.reader(handle))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        labels = root / "labels.csv"
        labels.write_text("filename,person,far\n" + "".join(f"img_{i:06d}.jpg,1,0\n" for i in range(100_000)))
        summary = root / "summary.json"
        subsets = {f"s{i}": {"device": {"accuracy": 0.5, "n": 24, "latency_us": [1.5] * 50}} for i in range(2000)}
        summary.write_text(json.dumps({"subsets": subsets}))
        cache = root / "entry.bin"
        with open(cache, "wb") as handle:
            block = bytes(range(256)) * (BYTES_PER_SAMPLE * 64 // 256)
            for _ in range(SAMPLES // 64):
                handle.write(block)

        csv_guarded = best_of(rounds, lambda: reading.read_csv(labels, reading.LABELS))
        csv_plain = best_of(rounds, lambda: plain_csv(labels))
        json_guarded = best_of(rounds, lambda: reading.read_json(summary, reading.SUMMARY))
        json_plain = best_of(rounds, lambda: json.loads(summary.read_text()))
        check = best_of(max(1, rounds // 2), lambda: file_checksum(cache))
    eval_seconds = SAMPLES * INVOKE_SECONDS
    print(
        f"labels CSV, 100,000 rows: guarded {csv_guarded * 1e3:.0f} ms, plain {csv_plain * 1e3:.0f} ms: "
        f"guarded / plain = {csv_guarded / csv_plain:.2f}  (target <= 2.0)"
    )
    print(
        f"run summary JSON, {summary_size(subsets)}: guarded {json_guarded * 1e3:.0f} ms, plain "
        f"{json_plain * 1e3:.0f} ms: guarded / plain = {json_guarded / json_plain:.2f}  (target <= 5.0)"
    )
    print(
        f"cache checksum of {SAMPLES:,} samples ({SAMPLES * BYTES_PER_SAMPLE / 1e6:.0f} MB): {check:.2f} s, "
        f"eval at 90 ms/sample {eval_seconds:.0f} s: check / eval = {check / eval_seconds:.4f}  (target <= 0.01)"
    )


def summary_size(subsets: dict) -> str:
    return f"{len(json.dumps({'subsets': subsets})) / 1e6:.1f} MB"


if __name__ == "__main__":
    main()
