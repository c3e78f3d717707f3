"""The smallest exact form on the wire (docs/link.md): samples/s of `harness eval --board sim --link-baud 921600` on
the default model (float32 input, integers 0..255), raw (HARNESS_INPUT_FORMS=raw: 110,592 bytes a sample) against
the smallest form the board decodes (the row codec's stream of the 27,648 pixel bytes, widened on the board), each
measured between two run sizes so start-up cancels, and its ratio to the
line-rate bound for 27,648-byte inputs (baud / 10 / 27,648 samples/s). Wire bytes per sample come from the run's
link counters. Every figure is `sim`: the virtual board's pseudo-terminal paced to the baud rate.

    python benchmarks/input_forms.py [--small 10] [--large 30] [--baud 921600] [--rounds 1]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INPUT_BYTES = 96 * 96 * 3  # the default model's input, one byte an element


def timed_eval(forms: str, limit: int, baud: int) -> tuple[float, int, dict]:
    """Wall seconds of one eval, its sample count and its link counters."""
    env = os.environ | {"HARNESS_INPUT_FORMS": forms}
    with tempfile.TemporaryDirectory() as results:
        args = ["eval", "--board", "sim", "--link-baud", str(baud), "--limit", str(limit), "--results", results]
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            sys.exit(f"eval failed: {done.stderr.strip()}")
        (run,) = Path(results).iterdir()
        summary = json.loads((run / "summary.json").read_text())
    return seconds, summary["samples"], summary["link"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--large", type=int, default=30)
    parser.add_argument("--baud", type=int, default=921600)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    bound = args.baud / 10 / INPUT_BYTES
    print(f"line-rate bound for {INPUT_BYTES:,}-byte inputs at {args.baud:,} baud: {bound:.3f} samples/s (sim)")
    rates = {}
    for forms in ("raw", "smallest"):
        per_round, per_sample = [], 0.0
        for _ in range(args.rounds):
            small_s, small_n, _ = timed_eval(forms, args.small, args.baud)
            large_s, large_n, link = timed_eval(forms, args.large, args.baud)
            per_round.append((large_n - small_n) / (large_s - small_s))
            per_sample = link["input_wire_bytes"] / large_n
        rates[forms] = statistics.median(per_round)
        print(
            f"{forms:>8}: {rates[forms]:.3f} samples/s = {rates[forms] / bound:.2f} x the bound; "
            f"{per_sample:,.0f} input bytes on the wire a sample, framing included (sim)"
        )
    print(f"smallest / raw: {rates['smallest'] / rates['raw']:.2f} x the samples/s (sim)")


if __name__ == "__main__":
    main()
