"""How long a layer trace of the default model takes over the virtual board's link paced like a UART at 921600 baud
(issue 34's target: under 3 s). The figure is `sim`: this machine's pseudo-terminal paced to the baud rate by the
virtual board (firmware/sim/sim_board.c) and the TFLM host interpreter keeping every tensor, not a real board.
Printed: the trace request alone (input loads, traced invokes, the answers), for comparison one plain run, the
fetch of one operator's output bytes (LAYER_DUMP: each answer frame runs the input once more), and the whole of
`harness debug layers` from Python (board start, handshake, trace, host reference, comparison) on a demo image.

    python benchmarks/layer_trace.py [--rounds 3] [--baud 921600]
"""

import argparse
import statistics
import time

import numpy as np

import harness
from harness.boards import get_board
from harness.defaults import DEFAULT_MODEL
from harness.device.launch import connect, with_link_options
from harness.model.cards import load_card
from harness.model.fetch import obtain_model
from harness.model.tflite_file import read_tflite

TARGET_SECONDS = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baud", type=int, default=921600)
    args = parser.parse_args()
    model = read_tflite(obtain_model(load_card(DEFAULT_MODEL)))
    info = np.iinfo(model.input.numpy_dtype) if model.input.numpy_dtype.kind in "iu" else None
    rng = np.random.default_rng(1)
    tensor = (
        rng.integers(info.min, info.max, model.input.shape, dtype=model.input.numpy_dtype, endpoint=True)
        if info
        else rng.uniform(0, 255, model.input.shape).astype(model.input.numpy_dtype)
    )
    data = tensor.tobytes()
    board = with_link_options(get_board("sim"), link_baud=args.baud)
    traces, runs = [], []
    with connect(board, model) as client:
        records = client.layer_trace(data)  # the first builds the interpreter that keeps every tensor
        for _ in range(args.rounds):
            started = time.monotonic()
            records = client.layer_trace(data)
            traces.append(time.monotonic() - started)
            started = time.monotonic()
            client.run(data)
            runs.append(time.monotonic() - started)
        frame = client.info.max_response_frame
        largest = max((o for r in records for o in r.outputs), key=lambda o: o.digest.bytes)
        operator = next(r.index for r in records if largest in r.outputs)
        started = time.monotonic()
        dumped = client.layer_tensor(data, operator, 0)
        dump = time.monotonic() - started
    wholes = []
    for _ in range(args.rounds):
        started = time.monotonic()
        whole = harness.trace_layers(DEFAULT_MODEL, board="sim", link_baud=args.baud)
        wholes.append(time.monotonic() - started)
    trace, run = statistics.median(traces), statistics.median(runs)
    print(f"{DEFAULT_MODEL}: {len(records)} operators, {model.input.bytes} input bytes, {frame}-byte answer frames")
    print(f"layer trace at {args.baud} baud: {trace:.2f} s (sim), median of {args.rounds}; target < {TARGET_SECONDS} s")
    print(f"one plain run (load, invoke, output) for comparison: {run:.2f} s (sim)")
    print(
        f"fetching operator {operator}'s output ({len(dumped):,} bytes, {-(-len(dumped) // (frame - 16))} frames): "
        f"{dump:.2f} s (sim)"
    )
    print(
        f"harness debug layers, whole (start, trace, host reference, comparison): {statistics.median(wholes):.2f} s "
        f"(sim), median of {args.rounds}; {whole.headline()}"
    )
    print("PASS" if max(trace, statistics.median(wholes)) < TARGET_SECONDS else "FAIL")


if __name__ == "__main__":
    main()
