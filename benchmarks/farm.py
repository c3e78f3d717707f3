"""How a sharded eval scales with the number of boards, side by side in one run.

For N = 2, 4 and 8: samples/s with N virtual boards ÷ (N x samples/s with one), each board at 921600
baud (the virtual board paces its link like a UART) with an emulated inference time, so the boards wait
rather than compete for this machine's cores. The samples go through the eval's own dealing
(harness/eval/sharding.py) and drivers (harness/device/fleet.py), each board a process of its own; the
host references an eval also runs are left out (they are host work, not board work). Timed from the
moment every board has said hello to the last result. Rounds alternate (one board, then N) and medians
are printed. Every figure is `sim`. Target: ≥ 0.9 for each N.

    python benchmarks/farm.py [--boards 2,4,8] [--per-board 16] [--rounds 3] [--invoke-ms 100]
                              [--model wv_quality_k_2_c_3]
"""

import argparse
import statistics
import time

import numpy as np

from harness.boards import get_board
from harness.device.fleet import FleetRequest, board_fleet
from harness.device.launch import ConnectOptions, with_link_options
from harness.eval.sharding import ShardedStream
from harness.model.card import load_card
from harness.model.fetch import obtain_model
from harness.model.tflite_file import read_tflite

BAUD = 921600


def samples_per_second(board, model, boards: int, samples: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    tensors = rng.integers(0, 256, size=(samples, model.input.bytes), dtype=np.uint8)
    options = ConnectOptions(uses=("run_stream",))
    with (
        board_fleet(board, model, options, FleetRequest(boards)) as members,
        ShardedStream(members, tensors, list(range(samples))) as shards,
    ):
        shards.ready()
        started = time.perf_counter()
        shards.go()
        arrived = sum(1 for _ in shards.arrivals())
        seconds = time.perf_counter() - started
    failed = [end.failure for end in shards.ends.values() if end.failure]
    if arrived != samples or failed:
        raise SystemExit(f"{boards} boards: {arrived} of {samples} samples arrived; failures: {failed}")
    return samples / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="2,4,8", help="board counts, comma-separated")
    parser.add_argument("--per-board", type=int, default=16, help="samples each board runs in a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--invoke-ms", type=float, default=100.0, help="each board's emulated inference time")
    parser.add_argument("--model", default="wv_quality_k_2_c_3", help="model card (its input is what is sent)")
    args = parser.parse_args()
    model = read_tflite(obtain_model(load_card(args.model)))
    board = with_link_options(get_board("sim"), link_baud=BAUD, emulate_invoke_ms=args.invoke_ms)
    counts = [int(n) for n in args.boards.split(",")]
    transfer_ms = model.input.bytes * 10 / BAUD * 1000
    print(
        f"virtual boards (sim) at {BAUD} baud, {args.model} input {model.input.bytes} bytes "
        f"({transfer_ms:.0f} ms on the wire), emulated inference {args.invoke_ms:g} ms, "
        f"{args.per_board} samples a board, {args.rounds} rounds, medians"
    )
    print(f"{'boards':>6} {'samples/s':>10} {'one board':>10} {'scaling':>8}")
    for count in counts:
        one, many = [], []
        for round_number in range(args.rounds):
            one.append(samples_per_second(board, model, 1, args.per_board, round_number))
            many.append(samples_per_second(board, model, count, args.per_board * count, round_number))
        single, sharded = statistics.median(one), statistics.median(many)
        print(f"{count:>6} {sharded:>10.2f} {single:>10.2f} {sharded / (count * single):>8.3f}")


if __name__ == "__main__":
    main()
