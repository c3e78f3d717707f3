"""Link throughput and pipelining on the virtual board with an emulated UART, side by side in one run.

(a) payload efficiency = input payload bytes/s achieved by LOAD_INPUT ÷ (baud/10), at 115200, 921600
    and 2000000 baud, 96x96x3 int8 inputs; target ≥ 0.95.
(b) samples/s of our protocol ÷ samples/s of the MLPerf Tiny / EEMBC DUT protocol (hex `db` chunks of
    31 bytes, one m-ready each; the C DUT in firmware/eembc) on the same emulated link and device at
    115200 baud; target ≥ 2.2.
(d) the same, our protocol switched to 2000000 baud after the handshake (SET_BAUD), EEMBC at its
    standard 115200; target ≥ 20.
(c) pipelined wall time ÷ max(total transfer time, total inference time), with the emulated inference
    time set within a factor of two of the transfer time; target ≤ 1.10. Transfer time is measured in
    the same run (sequential rounds: LOAD_INPUT alone), inference time is the device's own (sim) timer.
(hal) rows per real board HAL (firmware/boards/*, compiled for this machine against the stand-ins in
    firmware/hosted/, harness/device/hosted_hal.py): payload efficiency at 921600 and 2000000 baud and
    the (c) ratio at both rates (one input slot: the next input sent ahead into the receive buffer), with
    the TFLM host interpreter running wv_quality_k_2_c_3 (uint8[1,50,50,3]) from the
    shared fixtures. Labelled `sim (hosted HAL)`: the real HAL sources over an emulated UART, not a board.
(f) samples/s through the fault-injection proxy (harness/link/faults.py: drop = corrupt = 1e-4, 1e-3
    and 3e-3 per byte, each way) ÷ samples/s of the same inputs on the clean link, at 115200 and 921600
    baud; every output checked against the clean ones. Targets: ≥ 0.25 at 1e-3; at 3e-3 the run completes.
(g) row-coded ÷ raw inputs (benchmarks/link_codec.py): samples/s of demo images at 115200, 921600 and 2000000
    baud on the virtual board and the hosted HALs (the vww01 reference model), the inference emulated at the
    Cortex-M7 figure, and coded samples/s ÷ the line-rate bound of 27,648-byte inputs; target ≥ 1.4 at 921600.
Rounds alternate and medians are printed. Every figure is `sim`: this machine's pseudo-terminal paced
to the baud rate by the virtual board (firmware/sim/sim_board.c), not a real UART. The board's model
is a small int8 runner with a 96x96x3 input (the fixtures hold no int8 model of that shape; the link
does not care what the model computes, and every output is checked).

    python benchmarks/link.py [--rounds 3] [--samples 3] [--pipeline-samples 12] [--fault-samples 8]
                             [--fault-bauds 115200,921600] [--fault-rates 1e-4,1e-3,3e-3]
                             [--codec-samples 8] [--codec-bauds 115200,921600,2000000]
                             [--only sim|hal|faults|codec]
"""

import argparse
import statistics
import time

import numpy as np
from link_boards import (
    HAL_BAUDS,
    HAL_MODEL,
    HALS,
    INPUT_BYTES,
    SHAPE,
    MeanRunner,
    hal_client,
    hal_is_paced,
    shared_model,
    sim_client,
)
from link_codec import CODEC_BAUDS, codec_rows

from harness.link.faults import FaultSpec

BAUDS = (115200, 921600, 2000000)
PIPELINE_BAUD = 2000000
PROTOCOL_INVOKE_MS = 100  # the same emulated device for both protocols
FAULT_RATES = (1e-4, 1e-3, 3e-3)  # drop = corrupt = this, per byte, each way
FAULT_BAUDS = (115200, 921600)


def _inputs(count: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, SHAPE, dtype=np.int8).tobytes() for _ in range(count)]


def efficiency_round(baud: int, inputs: list[bytes]) -> float:
    with sim_client(baud) as client:
        started = time.perf_counter()
        for data in inputs:
            client.load_input(data)
        seconds = time.perf_counter() - started
        assert client.stats.resends == 0, client.stats
    return sum(map(len, inputs)) / seconds / (baud / 10)


def pipeline_round(invoke_ms: float, inputs: list[bytes]) -> tuple[float, float, float, float]:
    """(pipelined wall, total transfer, total inference, sequential wall) in seconds."""
    with sim_client(PIPELINE_BAUD, invoke_ms) as client:
        wall, transfer, inference, sequential_wall, pipelined = sequential_then_pipelined(client, inputs)
    assert pipelined == [MeanRunner.compute(d) for d in inputs], "outputs differ"
    return wall, transfer, inference, sequential_wall


def sequential_then_pipelined(client, inputs: list[bytes]):
    """The inputs one by one (LOAD_INPUT timed alone: the transfer; the device's own timer: the inference),
    then pipelined: (pipelined wall, total transfer, total inference, sequential wall, outputs)."""
    transfer = inference = 0.0
    started = time.perf_counter()
    sequential = []
    for data in inputs:
        t0 = time.perf_counter()
        client.load_input(data)
        transfer += time.perf_counter() - t0
        result = client.invoke()
        inference += result.timing.seconds
        sequential.append(result.output)
    sequential_wall = time.perf_counter() - started
    started = time.perf_counter()
    pipelined = [result.output for result in client.run_stream(inputs)]
    wall = time.perf_counter() - started
    assert pipelined == sequential, "outputs differ"
    return wall, transfer, inference, sequential_wall, pipelined


def samples_per_second(inputs: list[bytes], *, baud: int, eembc: bool = False, switch_to: int = 0) -> float:
    with sim_client(baud, PROTOCOL_INVOKE_MS, eembc, switch_to) as client:
        started = time.perf_counter()
        outputs = [result.output for result in client.run_stream(inputs)]
        seconds = time.perf_counter() - started
    assert outputs == [MeanRunner.compute(d) for d in inputs], "outputs differ"
    return len(inputs) / seconds


def fault_round(baud: int, inputs: list[bytes], rate: float) -> tuple[float, dict]:
    """samples/s over the whole run (the handshake left out) through the fault proxy at `rate` (0: no proxy),
    and what the link did; the outputs must be the clean ones."""
    faults = FaultSpec(drop=rate, corrupt=rate) if rate else None
    with sim_client(baud, faults=faults) as client:
        started = time.perf_counter()
        outputs = [result.output for result in client.run_stream(inputs)]
        seconds = time.perf_counter() - started
        stats = client.stats
    assert outputs == [MeanRunner.compute(d) for d in inputs], f"outputs differ at faults {rate:g}"
    return len(inputs) / seconds, {"go_backs": stats.go_backs, "chunk": stats.chunk_bytes}


def fault_rows(rounds: int, samples: int, bauds=FAULT_BAUDS, rates=FAULT_RATES) -> None:
    print(
        f"(f) throughput under faults ÷ clean throughput, drop = corrupt = rate per byte each way, {samples} samples "
        f"a run, medians of {rounds} rounds (clean and faulty runs alternate); target ≥ 0.25 at 1e-3, 3e-3 completes"
    )
    for baud in bauds:
        clean: list[float] = []
        faulty: dict[float, list[tuple[float, dict]]] = {rate: [] for rate in rates}
        for r in range(rounds):
            inputs = _inputs(samples, 300 + r)
            clean.append(fault_round(baud, inputs, 0)[0])
            for rate in rates:
                faulty[rate].append(fault_round(baud, inputs, rate))
        base = statistics.median(clean)
        print(f"    {baud:>7} baud  clean {base:6.3f} samples/s  rounds {_list(clean)}")
        for rate, runs in faulty.items():
            ratios = [speed / c for (speed, _), c in zip(runs, clean, strict=True)]
            go_backs = statistics.median(stats["go_backs"] for _, stats in runs)
            chunks = sorted({stats["chunk"] for _, stats in runs})
            print(
                f"    {baud:>7} baud  {rate:g}: {statistics.median(s for s, _ in runs):6.3f} samples/s, "
                f"÷ clean: median {statistics.median(ratios):.3f}  rounds {_list(ratios)}; "
                f"go-backs {go_backs:.0f}, final chunk {chunks} B; outputs identical"
            )


def hal_rows(model, rounds: int, samples: int, pipeline_samples: int) -> None:
    size = model.input.bytes
    rng = np.random.default_rng(7)
    print(
        f"(hal) real HAL sources on this machine, emulated UART; model {HAL_MODEL} (input {size} bytes); "
        "[sim (hosted HAL)]"
    )
    for name in HALS:
        usb = not hal_is_paced(name)
        cells = []
        for baud in HAL_BAUDS:
            values, resends = [], 0
            for _ in range(rounds):
                inputs = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for _ in range(samples)]
                with hal_client(name, baud, model) as client:
                    started = time.perf_counter()
                    for data in inputs:
                        client.load_input(data)
                    seconds = time.perf_counter() - started
                    resends += client.stats.resends  # a resend costs time: said beside the figure, never hidden
                    rate = client.stats.baud
                values.append(size * samples / seconds / (baud / 10))
            if usb:
                cells.append(f"{baud}: n/a (USB CDC, no baud; {statistics.median(values) * baud / 10 / 1e3:,.0f} kB/s)")
            else:
                assert rate == baud, f"{name} did not switch to {baud}"
                cells.append(f"{baud}: {statistics.median(values):.3f}" + (f" ({resends} resends)" if resends else ""))
        pipelined_cells = []
        for baud in HAL_BAUDS:
            ratios, details = [], ""
            for _ in range(rounds):
                inputs = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for _ in range(pipeline_samples)]
                invoke_ms = round(size * 10 / baud * 1e3 * 0.75, 1)
                with hal_client(name, baud, model, invoke_ms) as client:
                    wall, transfer, inference, _, _ = sequential_then_pipelined(client, inputs)
                    slots = client.info.input_slots
                ratios.append(wall / max(transfer, inference))
                details = (
                    f"transfer {transfer:.3f} s, inference {inference:.3f} s, wall {wall:.3f} s, input slots {slots}, "
                    f"rx buffer {client.info.rx_buffer_bytes}, emulated inference {invoke_ms} ms"
                )
            pipelined_cells.append(f"at {baud}: median {statistics.median(ratios):.3f} ({details})")
        print(f"    {name:<15} efficiency {'; '.join(cells)}")
        for cell in pipelined_cells:
            print(f"        (c) {cell}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=3, help="inputs per efficiency round")
    parser.add_argument("--pipeline-samples", type=int, default=12)
    parser.add_argument("--protocol-samples", type=int, default=2, help="inputs per round for (b) and (d)")
    parser.add_argument("--fault-samples", type=int, default=8, help="inputs per run for (f)")
    parser.add_argument("--fault-bauds", type=_numbers(int), default=FAULT_BAUDS, help="(f) at these bauds: 921600")
    parser.add_argument("--fault-rates", type=_numbers(float), default=FAULT_RATES, help="(f) at these, e.g. 1e-3")
    parser.add_argument("--codec-samples", type=int, default=8, help="demo images per run for (g)")
    parser.add_argument("--codec-bauds", type=_numbers(int), default=CODEC_BAUDS, help="(g) at these bauds")
    parser.add_argument(
        "--only",
        choices=("sim", "hal", "faults", "codec"),
        help="only the virtual board's figures, the HALs', (f) or (g)",
    )
    args = parser.parse_args()
    if args.only == "faults":
        fault_rows(args.rounds, args.fault_samples, args.fault_bauds, args.fault_rates)
        return
    if args.only == "codec":
        codec_rows(args.codec_samples, args.codec_bauds, args.rounds)
        return
    if args.only != "sim":
        model = shared_model()
        if model is None:
            print(f"(hal) skipped: needs ../shared/fixtures/models/{HAL_MODEL}")
        else:
            hal_rows(model, args.rounds, max(args.samples, 3), args.pipeline_samples)
    if args.only == "hal":
        return

    print(f"input int8{list(SHAPE)} ({INPUT_BYTES} bytes); all figures [sim]")
    transfer_seconds = INPUT_BYTES * 10 / PIPELINE_BAUD
    invoke_ms = round(transfer_seconds * 1e3 * 0.75)  # inference within 2x of transfer
    efficiency: dict[int, list[float]] = {baud: [] for baud in BAUDS}
    pipeline: list[tuple[float, float, float, float]] = []
    rates: dict[str, list[float]] = {"ours 115200": [], "eembc 115200": [], "ours 2000000 after switch": []}
    for r in range(args.rounds):
        batch = _inputs(args.protocol_samples, 200 + r)
        rates["eembc 115200"].append(samples_per_second(batch[:1], baud=115200, eembc=True))  # 5 s a sample
        rates["ours 115200"].append(samples_per_second(batch, baud=115200))
        rates["ours 2000000 after switch"].append(samples_per_second(batch * 3, baud=115200, switch_to=2_000_000))
        for baud in BAUDS:
            count = 1 if baud == 115200 else args.samples  # 2.4 s per input at 115200
            efficiency[baud].append(efficiency_round(baud, _inputs(count, r)))
        pipeline.append(pipeline_round(invoke_ms, _inputs(args.pipeline_samples, 100 + r)))

    print("(a) payload efficiency = payload bytes/s ÷ (baud/10), target ≥ 0.95")
    for baud in BAUDS:
        values = efficiency[baud]
        listed = ", ".join(f"{v:.3f}" for v in values)
        print(f"    {baud:>8} baud: median {statistics.median(values):.3f}  rounds {listed}")
    print(
        f"(b)/(d) samples/s, same emulated device (inference {PROTOCOL_INVOKE_MS} ms), medians of {args.rounds} rounds"
    )
    for name, values in rates.items():
        listed = ", ".join(f"{v:.3f}" for v in values)
        print(f"    {name:<26} {statistics.median(values):7.3f} samples/s  rounds {listed}")
    b = [o / e for o, e in zip(rates["ours 115200"], rates["eembc 115200"], strict=True)]
    d = [o / e for o, e in zip(rates["ours 2000000 after switch"], rates["eembc 115200"], strict=True)]
    print(f"(b) ours ÷ EEMBC at 115200: median {statistics.median(b):.2f} (target ≥ 2.2), rounds {_list(b)}")
    print(f"(d) ours at 2000000 after the switch ÷ EEMBC at 115200: median {statistics.median(d):.1f} (target ≥ 20)")
    ratios = [wall / max(transfer, inference) for wall, transfer, inference, _ in pipeline]
    wall, transfer, inference, sequential = (statistics.median(col) for col in zip(*pipeline, strict=True))
    print(
        f"(c) pipelining at {PIPELINE_BAUD} baud, {args.pipeline_samples} samples, emulated inference {invoke_ms} ms, "
        "target ≤ 1.10"
    )
    print(
        f"    total transfer {transfer:.3f} s, total inference {inference:.3f} s "
        f"(ratio {max(transfer, inference) / min(transfer, inference):.2f}x), sequential wall {sequential:.3f} s"
    )
    print(
        f"    pipelined wall {wall:.3f} s; wall ÷ max(transfer, inference): median {statistics.median(ratios):.3f}  "
        f"rounds {', '.join(f'{v:.3f}' for v in ratios)}"
    )
    fault_rows(args.rounds, args.fault_samples)
    codec_rows(args.codec_samples, args.codec_bauds, args.rounds)


def _numbers(kind):
    return lambda text: tuple(kind(part) for part in text.split(","))


def _list(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    main()
