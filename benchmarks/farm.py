"""How a sharded eval scales with the number of boards, side by side in one run.

For N = 2, 4 and 8: samples/s with N virtual boards ÷ (N x samples/s with one), each board at 921600
baud (the virtual board paces its link like a UART) with an emulated inference time, so the boards wait
rather than compete for this machine's cores. The samples go through the eval's own dealing
(harness/device/sharding.py) and drivers (harness/device/fleet.py), each board a process of its own; the
host references an eval also runs are left out (they are host work, not board work). Timed from the
moment every board has said hello to the last result. Rounds alternate (one board, then N) and medians
are printed. Every figure is `sim`. Target: ≥ 0.9 for each N.

The last row kills a board mid-run: two virtual boards reached as real ones are (named ports, a board file of
kind "device", so a port that goes away is waited for, up to 30 s, as a USB board's would be), and once the
first has run a sample its process is killed. Side by side: the run's seconds with the kill, the same run
without it, and one board alone. The killed board's sample is handed on as its port fails, so the run with
the kill should take about as long as the one board alone, not 30 s more.

Then "place vs port on a link paced at 921600 baud": one virtual board (paced at 921600 baud, kind "device")
reached directly on its port and through a labgrid place on a loopback farm (tests/labgrid_farm.py: a
coordinator, an exporter and ser2net, set up as docs/farm.md says; --stock-ser2net: as labgrid alone starts
it), in the same run, rounds alternated: samples/s through the place ÷ samples/s on the port, medians (target
≥ 0.95), and what reaching the board costs each way (the place: acquire, ser2net's start, the RFC 2217
negotiation, HELLO), with the place's acquisition alone. Needs labgrid and ser2net (skipped otherwise).

    python benchmarks/farm.py [--boards 2,4,8] [--per-board 16] [--rounds 3] [--invoke-ms 100]
                              [--model wv_quality_k_2_c_3] [--place-samples 40] [--stock-ser2net]
"""

import argparse
import dataclasses
import os
import signal
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from harness.boards import get_board
from harness.device.drivers.virtual import sim_board_process
from harness.device.fleet import FleetRequest, board_fleet
from harness.device.labgrid_place import labgrid_port
from harness.device.launch import ConnectOptions, with_link_options
from harness.device.sharding import ShardedStream
from harness.link.roles import KeywordStreaming
from harness.model.cards import load_card
from harness.model.fetch import obtain_model
from harness.model.tflite_file import read_tflite

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the loopback farm the e2e tests use
from tests.labgrid_farm import labgrid_farm, missing

BAUD = 921600


def timed_run(board, model, options: ConnectOptions, boards: int, samples: int, seed: int) -> tuple[float, float]:
    """(seconds until every board has said hello, samples/s from then to the last result)."""
    rng = np.random.default_rng(seed)
    tensors = rng.integers(0, 256, size=(samples, model.input.bytes), dtype=np.uint8)
    options = dataclasses.replace(options, roles=(KeywordStreaming,))
    connecting = time.perf_counter()
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
    return started - connecting, samples / seconds


def samples_per_second(board, model, boards: int, samples: int, seed: int) -> float:
    return timed_run(board, model, ConnectOptions(), boards, samples, seed)[1]


def run_seconds(board, model, boards: int, samples: int, seed: int, kill: bool) -> float:
    """Seconds from every hello to the last result, `boards` virtual boards on named ports; with `kill`, the
    first board's process killed once it has run a sample (its failure is expected, any other is not)."""
    rng = np.random.default_rng(seed)
    tensors = rng.integers(0, 256, size=(samples, model.input.bytes), dtype=np.uint8)
    board = board.with_link(baudrate=board.sim.link_baud)  # the host's port at the emulated link's rate
    killed = False
    with ExitStack() as stack:
        ptys = [stack.enter_context(sim_board_process(board, model.path)) for _ in range(boards)]
        options = ConnectOptions(port=",".join(ptys), roles=(KeywordStreaming,))
        device = dataclasses.replace(board, kind="device")  # reached as a real board: its port may come back
        members = stack.enter_context(board_fleet(device, model, options, FleetRequest(boards)))
        shards = stack.enter_context(ShardedStream(members, tensors, list(range(samples))))
        shards.ready()
        started = time.perf_counter()
        shards.go()
        arrived = 0
        for arrival in shards.arrivals():
            arrived += 1
            if kill and not killed and arrival.board == ptys[0]:
                os.kill(ptys[0].pid, signal.SIGKILL)
                killed = True
        seconds = time.perf_counter() - started
        failed = [end.failure for end in shards.ends.values() if end.failure]
    if arrived != samples or killed != kill or len(failed) != int(kill):
        raise SystemExit(
            f"{boards} boards: {arrived} of {samples} samples arrived; killed {killed}; failures: {failed}"
        )
    return seconds


def killed_row(board, model, per_board: int, rounds: int) -> None:
    killed, whole, alone = [], [], []
    for round_number in range(rounds):
        killed.append(run_seconds(board, model, 2, 2 * per_board, round_number, kill=True))
        whole.append(run_seconds(board, model, 2, 2 * per_board, round_number, kill=False))
        alone.append(run_seconds(board, model, 1, 2 * per_board, round_number, kill=False))
    print(
        f"\n2 boards on named ports, {2 * per_board} samples, medians: one killed mid-run "
        f"{statistics.median(killed):.2f} s, none killed {statistics.median(whole):.2f} s, "
        f"one board alone {statistics.median(alone):.2f} s"
    )


def place_row(board, model, samples: int, rounds: int, stock_ser2net: bool) -> None:
    """One virtual board paced at BAUD, on its port and through a labgrid place, rounds alternated."""
    reason = missing()
    if reason:
        print(f"\nplace vs port: skipped ({reason})")
        return
    board = board.with_link(baudrate=board.sim.link_baud)
    device = dataclasses.replace(board, kind="device")  # a place holds real boards only
    place = "farm-1"
    connect: dict[str, list[float]] = {"port": [], "place": [], "acquire": []}
    rate: dict[str, list[float]] = {"port": [], "place": []}
    with (
        sim_board_process(board, model.path) as pty,
        labgrid_farm({place: str(pty)}, stock_ser2net=stock_ser2net) as farm,
    ):
        os.environ["LG_COORDINATOR"] = farm.coordinator
        ways = {"port": ConnectOptions(port=str(pty)), "place": ConnectOptions(labgrid_place=place)}
        for round_number in range(rounds):
            for way, options in ways.items():
                seconds, per_second = timed_run(device, model, options, 1, samples, round_number)
                connect[way].append(seconds)
                rate[way].append(per_second)
            acquiring = time.perf_counter()
            with labgrid_port(place):
                connect["acquire"].append(time.perf_counter() - acquiring)
    port, through = statistics.median(rate["port"]), statistics.median(rate["place"])
    ser2net = "as labgrid alone starts it" if stock_ser2net else "through scripts/exporter/ser2net (chardelay off)"
    print(
        f"\nplace vs port on a link paced at {BAUD} baud (sim; one virtual board, {samples} samples a round, "
        f"{rounds} rounds alternated, medians; ser2net {ser2net}):\n"
        f"  port {port:.2f} samples/s, place {through:.2f} samples/s: place/port {through / port:.3f}  "
        f"(rounds: port {[round(r, 2) for r in rate['port']]}, place {[round(r, 2) for r in rate['place']]})\n"
        f"  reaching the board: port {statistics.median(connect['port']):.2f} s, place "
        f"{statistics.median(connect['place']):.2f} s (acquire, ser2net's start, RFC 2217 negotiation, HELLO); "
        f"the place's acquisition alone {statistics.median(connect['acquire']):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="2,4,8", help="board counts, comma-separated")
    parser.add_argument("--per-board", type=int, default=16, help="samples each board runs in a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--invoke-ms", type=float, default=100.0, help="each board's emulated inference time")
    parser.add_argument("--model", default="wv_quality_k_2_c_3", help="model card (its input is what is sent)")
    parser.add_argument("--place-samples", type=int, default=40, help="samples a round, place vs port")
    parser.add_argument("--stock-ser2net", action="store_true", help="the farm's ser2net as labgrid alone starts it")
    parser.add_argument("--only-place", action="store_true", help="only the place-vs-port row")
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
    if args.only_place:
        place_row(board, model, args.place_samples, args.rounds, args.stock_ser2net)
        return
    print(f"{'boards':>6} {'samples/s':>10} {'one board':>10} {'scaling':>8}")
    for count in counts:
        one, many = [], []
        for round_number in range(args.rounds):
            one.append(samples_per_second(board, model, 1, args.per_board, round_number))
            many.append(samples_per_second(board, model, count, args.per_board * count, round_number))
        single, sharded = statistics.median(one), statistics.median(many)
        print(f"{count:>6} {sharded:>10.2f} {single:>10.2f} {sharded / (count * single):>8.3f}")
    killed_row(board, model, args.per_board, args.rounds)
    place_row(board, model, args.place_samples, args.rounds, args.stock_ser2net)


if __name__ == "__main__":
    main()
