"""How long `harness inspect` takes over every model card and the TFLM person_detect example.

The target (a whole pass in under two minutes on an idle 2-core machine) is a speed figure, so it is
measured here rather than asserted by the test suite. Every figure is `host` (this machine).

    python benchmarks/inspect_speed.py [--rounds 3]
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness.model.card import all_cards

TARGET_SECONDS = 120
FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
FIXTURE_EXAMPLE = FIXTURES / "models" / "tflm" / "person_detect.tflite"


def one_pass(targets: list[str]) -> float:
    started = time.perf_counter()
    for target in targets:
        subprocess.run([sys.executable, "-m", "harness", "inspect", target, "--json"], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    targets = [*all_cards()] + ([str(FIXTURE_EXAMPLE)] if FIXTURE_EXAMPLE.is_file() else [])
    times = [one_pass(targets) for _ in range(rounds)]
    median = statistics.median(times)
    print(f"inspect over {len(targets)} models: median {median:.1f} s of {rounds} rounds (host)")
    print(f"median / target ({TARGET_SECONDS} s): {median / TARGET_SECONDS:.2f}  (target <= 1.00)")


if __name__ == "__main__":
    main()
