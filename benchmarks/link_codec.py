"""benchmarks/link.py's (g) rows: row-coded inputs against raw ones (docs/link.md, "Compressed inputs"), samples/s
and wire bytes a sample at 115200, 921600 and 2000000 baud, with the inference emulated at the Cortex-M7 figure,
and samples/s against the line-rate bound of 27,648-byte inputs (baud / 10 / 27,648).

The inputs are demo images as the MLPerf Tiny vww01 card prepares them (96x96 RGB, int8: pixel - 128). The
inference time is the default model's 24.5 M instructions on qemu_m7 at a 480 MHz Cortex-M7 (one instruction a
cycle: `estimated`), 51 ms. Raw sends HARNESS_INPUT_FORMS=raw; coded lets the host choose
(harness/link/input_forms.py). On the virtual board the runner computes the per-channel mean (every output
checked); on the hosted HALs the TFLM host interpreter runs the vww01 reference model (vww_96_int8, int8[1,96,96,3],
from the shared fixtures) and the coded outputs must equal the raw ones. Samples/s is `sim` (`sim (hosted HAL)`).
"""

import os
import statistics
import time

import numpy as np
from link_boards import HALS, MeanRunner, hal_client, hal_is_paced, shared_model, sim_client

from harness.eval.dataset import load_dataset
from harness.eval.preprocess import load_rgb, real_input
from harness.link.input_forms import FORMS_SETTING
from harness.model.cards import all_cards

M7_INVOKE_MS = 24.5e6 / 480e6 * 1000
CODEC_BAUDS = (115200, 921600, 2000000)
VWW01_MODEL = "mlperf_tiny_reference/vww_96_int8.tflite"
VWW_INPUT_BYTES = 96 * 96 * 3


def demo_inputs(count: int) -> list[bytes]:
    """The demo images as vww01's int8 inputs: 96x96 RGB pixels less 128."""
    pre = all_cards()["mlperf_tiny_vww01"].preprocessing
    raw_pixels = type(pre)(**{**pre.__dict__, "scaling": "raw"})
    found = []
    for sample in load_dataset("demo").samples[:count]:
        pixels = np.clip(np.round(real_input(load_rgb(sample.image_path), raw_pixels)), 0, 255).astype(np.int16)
        found.append((pixels - 128).astype(np.int8).tobytes())
    return found


def _stream(client, inputs: list[bytes]) -> tuple[float, float, list[bytes]]:
    """(samples/s, input wire bytes a sample, outputs), the first sample's set-up left out of the rate."""
    client.run(inputs[0])
    started = time.perf_counter()
    outputs = [result.output for result in client.run_stream(inputs[1:])]
    seconds = time.perf_counter() - started
    return (len(inputs) - 1) / seconds, client.stats.input_wire_bytes / len(inputs), outputs


def _measured(open_client, args: tuple, inputs: list[bytes], forms: str) -> tuple[float, float, list[bytes]]:
    os.environ[FORMS_SETTING] = forms
    try:
        with open_client(*args) as client:
            return _stream(client, inputs)
    finally:
        del os.environ[FORMS_SETTING]


def _row(label: str, baud: int | None, raw: list[tuple], coded: list[tuple], source: str) -> str:
    """One (g) row from alternating rounds: median samples/s, wire bytes a sample of the last round."""
    raw_rate, rate = (statistics.median(run[0] for run in runs) for runs in (raw, coded))
    raw_wire, wire = raw[-1][1], coded[-1][1]
    line = f"{baud:>8} baud" if baud else "  USB CDC, no baud"
    bound = f"{rate / (baud / 10 / VWW_INPUT_BYTES):.2f}" if baud else "n/a"
    rounds = ", ".join(f"{c[0] / r[0]:.2f}" for r, c in zip(raw, coded, strict=True))
    return (
        f"    {label:<15} {line}: raw {raw_rate:5.2f} samples/s ({raw_wire:,.0f} B a sample), coded "
        f"{rate:5.2f} samples/s ({wire:,.0f} B a sample); coded ÷ raw {rate / raw_rate:.2f} (rounds {rounds}), "
        f"coded ÷ line-rate bound {bound} [{source}]"
    )


def _rounds(open_client, args: tuple, inputs: list[bytes], rounds: int) -> tuple[list[tuple], list[tuple]]:
    """Raw and coded runs, alternating, `rounds` of each."""
    raw, coded = [], []
    for _ in range(rounds):
        raw.append(_measured(open_client, args, inputs, "raw"))
        coded.append(_measured(open_client, args, inputs, "smallest"))
    return raw, coded


def codec_rows(samples: int, bauds=CODEC_BAUDS, rounds: int = 3, hals: bool = True) -> None:
    inputs = demo_inputs(samples + 1)
    print(
        f"(g) row-coded ÷ raw inputs, {samples} demo images a run (int8[1,96,96,3]), medians of {rounds} alternating "
        f"rounds, inference emulated at {M7_INVOKE_MS:.0f} ms [estimated: 24.5 M instructions at 480 MHz]; "
        "line-rate bound = baud / 10 / 27,648"
    )
    expected = [MeanRunner.compute(d) for d in inputs[1:]]
    for baud in bauds:
        raw, coded = _rounds(sim_client, (baud, M7_INVOKE_MS), inputs, rounds)
        assert all(outputs == expected for _, _, outputs in raw + coded), "outputs differ"
        print(_row("virtual board", baud, raw, coded, "sim"))
    model = shared_model(VWW01_MODEL) if hals else None
    if hals and model is None:
        print(f"    hosted HALs skipped: needs ../shared/fixtures/models/{VWW01_MODEL}")
    for name in HALS if model is not None else ():
        paced = hal_is_paced(name)
        for baud in bauds if paced else [max(bauds)]:  # USB CDC has no baud rate: one row
            raw, coded = _rounds(hal_client, (name, baud, model, M7_INVOKE_MS), inputs, rounds)
            assert all(run[2] == raw[0][2] for run in raw + coded), f"{name}: coded outputs differ from raw"
            print(_row(name, baud if paced else None, raw, coded, "sim (hosted HAL)"))
